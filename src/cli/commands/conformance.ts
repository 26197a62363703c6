import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { carrierOf, globalFlags, tokenOf, writeErr, writeOut } from '../context.js';

interface ConformanceFlags {
  features?: string;
  scenarios?: string;
  only?: string;
  report?: string;
  junit?: string;
  scopelessToken?: string;
}

/** No scenario failed, but some could not run: not a verdict of non-conformance (1). */
const INCOMPLETE_EXIT = 8;

export function registerConformance(program: Command): void {
  program
    .command('conformance <url>')
    .description("run the conformance scenarios (spec/conformance) against any server, over the raw protocol; exits 1 when one fails, 8 when none failed but the run was incomplete (the server lacks the probe operations)")
    .option('--features <file>', 'what the server claims, for servers without services/info (default: asked of the server through services/info and services/list)')
    .option('--scenarios <dir>', 'scenario directory (default spec/conformance/scenarios)')
    .option('--only <pattern>', 'run only scenarios whose id or area contains this')
    .option('--report <file>', 'write a JSON report')
    .option('--junit <file>', 'write a JUnit XML report')
    .option('--scopeless-token <token>', 'a valid token that holds no scopes, for the access-control scenarios')
    .action(async (url: string, opts: ConformanceFlags, command: Command) => {
      const flags = globalFlags(command);
      const c = await import('../../conformance/index.js');
      const options = { url, codec: flags.codec, token: tokenOf(flags), certHash: flags.certHash, transport: carrierOf(flags, url) };
      let features = c.loadFeatures(opts.features);
      if (!opts.features) {
        const found = await c.discoverFeatures(options, features);
        features = found.features;
        for (const note of found.notes) writeErr(`[callwire] server: ${note}`);
      }
      const all = c.loadScenarios(opts.scenarios);
      const chosen = opts.only ? all.filter((s) => s.scenario.id.includes(opts.only!) || s.area.includes(opts.only!)) : all;
      const results = [];
      for (const { area, scenario } of chosen) {
        results.push(await c.runScenario(area, scenario, { ...options, features, scopelessToken: opts.scopelessToken }));
      }
      await writeOut(`${c.table(results)}\n`);
      const meta = { url: url.replace(/\/\/[^@/]*@/, '//'), codec: flags.codec, implementation: features.implementation };
      if (opts.report) writeFileSync(opts.report, c.jsonReport(results, meta));
      if (opts.junit) writeFileSync(opts.junit, c.junitReport(results, `conformance ${flags.codec}`));
      const failed = results.filter((r) => r.status === 'fail').length;
      const withoutProbes = results.filter((r) => r.missing?.includes(c.PROBES)).length;
      if (failed > 0) writeErr(`Error: ${failed} scenario(s) failed`);
      else if (withoutProbes > 0) {
        writeErr(`[callwire] incomplete: ${withoutProbes} scenario(s) not applicable: this server does not serve the probe operations conformance/* they drive; run it with callwire serve --conformance to check them`);
      }
      process.exitCode = failed > 0 ? 1 : withoutProbes > 0 ? INCOMPLETE_EXIT : 0;
    });
}
