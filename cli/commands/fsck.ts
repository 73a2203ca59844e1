import { CONFIG_ERROR, defineCommand, EXIT } from '../command.js';
import { printJson } from '../json-output.js';

export const fsckCommand = defineCommand({
  name: 'fsck',
  synopsis: 'fsck',
  summary: 'check the whole store: every blob re-hashed, every record re-verified',
  usage: 'pairbench fsck [options]',
  about: `Checks the whole store: every blob is re-hashed (a size and mtime prove nothing),
every action record re-verified against its key, and every blob a record needs is
present and intact. Lists what is corrupt or missing. With --repair, drops it: the
nodes that need it are rebuilt by the next 'pairbench run'.`,
  options: [['repair', null, 'drop corrupt blobs and the records that need them']],
  config: true,
  usesStore: false,
  exits: `0 the store is intact; 1 damage was found (dropped with --repair); ${CONFIG_ERROR}.`,
  async run({ io, json, values, project: { ctx } }) {
    const { fsck, fsckClean } = await import('../../pipeline/store/fsck.js');
    const report = fsck(ctx.store, { repair: Boolean(values.repair) });
    const clean = fsckClean(report);
    if (json) printJson(io.stdout, { ok: clean, ...report });
    else {
      const verb = report.repaired ? 'dropped' : 'found';
      const lines = [
        `checked ${report.blobs_checked} blobs (${(report.bytes_checked / 1e6).toFixed(2)} MB) and ${report.records_checked} records in ${ctx.store.dir}`,
        ...report.corrupt_blobs.map((d) => `${verb} corrupt blob ${d} (its bytes do not hash to its name)`),
        ...report.corrupt_records.map((r) => `${verb} corrupt record ${r.key}: ${r.reason}`),
        ...report.broken_records.map((r) => `${verb} record ${r.key} of ${r.node}: it needs ${r.blobs.length} missing or corrupt blob(s)`),
        ...(report.corrupt_pack ? [report.corrupt_pack] : []),
        `checked ${report.logs_checked} registry log(s)`,
        ...report.broken_logs.map((l) => `registry log ${l.name} is broken: ${l.problem} (restore it from a copy; --repair does not touch it)`),
        ...report.foreign_signers.map(
          (l) =>
            `note: registry log ${l.name} is signed by key(s) ${l.keys.join(', ')}, not this machine's record key: made on another machine, or rewritten and re-signed (a committed lock names the keys it trusts)`,
        ),
        clean
          ? 'the store is intact'
          : report.repaired
            ? "repaired: the next 'pairbench run' rebuilds what was dropped"
            : "run 'pairbench fsck --repair' to drop them; the next run rebuilds them",
      ];
      io.stdout.write(lines.join('\n') + '\n');
    }
    return clean ? EXIT.ok : EXIT.nodeFailed;
  },
});
