import { describe, expect, it } from 'vitest';
import { containerName, containerReference, imageReference } from '../../src/contracts/index.js';

const hex64 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The engine's grammars (spec §12, DOCKER-1), as the contracts hold them. */
describe('engine reference grammars', () => {
  it('a container: its id, an id prefix, or a name; nothing that could leave its path segment', () => {
    for (const ok of [hex64, hex64.slice(0, 12), 'a', 'web', 'web-1.blue_2', 'Web9', 'x..y']) expect(containerReference.safeParse(ok).success, ok).toBe(true);
    for (const bad of ['', '/web', '..', '.', '../../etc', 'x/../../127.0.0.1:1/y', 'web/json', '-web', '_web', '.web', 'web?all=1', 'web#x', 'web%2F..', 'a b', 'wéb', 'web\n']) {
      expect(containerReference.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    // A name a caller gives at create is of the same grammar.
    expect(containerName.safeParse('web-1.blue_2').success).toBe(true);
    expect(containerName.safeParse('/web').success).toBe(false);
  });

  it('an image: [registry[:port]/]name[:tag][@digest], or an image id', () => {
    const good = [
      'busybox',
      'busybox:1.36',
      'callwire-test:busybox',
      'library/busybox',
      'docker.io/library/busybox:latest',
      'localhost:5000/team/app',
      'registry.example.com:443/a/b/c:v1.2-rc_3',
      '[::1]:5000/app:1',
      `busybox@sha256:${hex64}`,
      `ghcr.io/o/r:t@sha256:${hex64}`,
      `sha256:${hex64}`,
      hex64.slice(0, 12),
      'a__b',
      'a-----b',
      `${'a'.repeat(255)}:t`,
    ];
    for (const ok of good) expect(imageReference.safeParse(ok).success, ok).toBe(true);
    const bad = [
      '',
      '../../etc',
      'x/../../../127.0.0.1:1/y',
      'Busybox',
      'busybox:',
      ':tag',
      'a//b',
      '/busybox',
      'busybox/',
      'a___b',
      '-a',
      'a.',
      'busybox:-tag',
      `busybox:${'t'.repeat(129)}`,
      'busybox@sha256:abc',
      'a b',
      'busybox?x=1',
      'busybox#x',
      'a%2Fb',
      `${'a'.repeat(256)}:t`,
      'a'.repeat(100_000),
    ];
    for (const reference of bad) expect(imageReference.safeParse(reference).success, JSON.stringify(reference.slice(0, 60))).toBe(false);
  });
});
