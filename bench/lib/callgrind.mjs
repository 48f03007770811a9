/**
 * Instructions a process runs, counted by valgrind's callgrind: on shared cores CPU time
 * moves with what else runs (caches, preemption), an instruction count does not. The process
 * starts uninstrumented (a Nest start under callgrind takes minutes); `instrument` turns it on.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** What runs `nodePath` under callgrind; its dumps go to `dir`. */
export function callgrindLauncher(dir, nodePath) {
  const out = `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`;
  return { command: 'valgrind', args: ['--tool=callgrind', '--instr-atstart=no', out, nodePath] };
}

const control = (...args) => execFileSync('callgrind_control', args, { stdio: 'pipe' });

export const instrument = (pid) => control('-i', 'on', String(pid));

/** Zeroes the counters of `pid`. */
export const zero = (pid) => control('-z', String(pid));

/** Dumps the counters of `pid` and returns the instructions since the last zero. */
export function dumpInstructions(pid, dir) {
  control('-d', String(pid));
  const prefix = `callgrind.out.${pid}`;
  const newest = readdirSync(dir)
    .filter((name) => name.startsWith(prefix))
    .map((name) => join(dir, name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(newest, 'utf8'));
  if (!totals) throw new Error(`no totals in ${newest}`);
  return Number(totals[1]);
}
