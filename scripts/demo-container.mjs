// The demo container `npm start` makes and the README's examples run against
// (README "In one minute"): one home for what it is, so the test that runs those
// examples gets the same container.
const IMAGES = ['callwire-test:busybox', 'busybox:latest', 'busybox', 'alpine:latest'];

export const DEMO = 'callwire-demo';

/**
 * Reuses the container `name` (started if stopped), or creates it from a local image,
 * never pulling. Returns what it did, or undefined when no local image fits.
 * @param {import('dockerode')} docker
 * @param {string} [name]
 * @returns {Promise<string | undefined>}
 */
export async function demoContainer(docker, name = DEMO) {
  const existing = docker.getContainer(name);
  const info = await existing.inspect().catch(() => undefined);
  if (info) {
    if (!info.State.Running) await existing.start();
    return `${name} (reused)`;
  }
  const local = new Set((await docker.listImages()).flatMap((i) => i.RepoTags ?? []));
  const image = IMAGES.find((candidate) => local.has(candidate) || local.has(`${candidate}:latest`));
  if (!image) return undefined;
  const created = await docker.createContainer({
    name,
    Image: image,
    // A line a second, so the README's logs example has something to follow.
    Cmd: ['sh', '-c', 'while :; do date; sleep 1; done'],
    Labels: { 'callwire.demo': 'true' },
    HostConfig: { NetworkMode: 'none', Init: true },
  });
  await created.start();
  return `${name} (created from ${image})`;
}
