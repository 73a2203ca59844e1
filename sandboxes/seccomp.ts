import { arch } from 'node:os';

/**
 * A classic-BPF seccomp program (what `bwrap --seccomp FD` loads) that stops a
 * sandboxed process from leaving anything privileged behind:
 *
 * - setting the setuid or setgid bit, through chmod/fchmod/fchmodat/fchmodat2, or
 *   by creating a file with those bits (open/openat/creat with O_CREAT or
 *   O_TMPFILE, mknod/mknodat): EPERM;
 * - a new user namespace, through clone or unshare with CLONE_NEWUSER: EPERM (inside
 *   one a process holds a full capability set: `unshare -Ur` would be root there);
 * - openat2, io_uring and clone3, whose arguments a filter cannot inspect: ENOSYS (libc
 *   and libuv fall back to openat, plain syscalls and clone);
 * - any syscall of another ABI (i386 through int 0x80, x32): EPERM, so the checks
 *   above cannot be bypassed by switching ABI.
 *
 * Devices need CAP_MKNOD, which the sandbox never has. Everything else is allowed:
 * the namespaces and the unprivileged uid are the sandbox; this closes one door
 * they leave open (an owner may always chmod u+s its own file).
 */

const S_ISUID_OR_ISGID = 0o6000;
/** O_CREAT | the O_TMPFILE bit (O_TMPFILE = __O_TMPFILE | O_DIRECTORY): the flags under which open's mode is used. */
const O_CREAT_OR_TMPFILE = 0o100 | 0o20000000;
/** clone/unshare's flag for a new user namespace: inside one, a process holds every capability. */
const CLONE_NEWUSER = 0x10000000;
const EPERM = 1;
const ENOSYS = 38;

const RET_ALLOW = 0x7fff0000;
const retErrno = (errno: number) => 0x00050000 | errno;

/** Where a syscall's mode (and, for open-like calls, flags) argument sits. */
interface ModeRule {
  nr: number;
  mode: number;
  flags?: number;
}

/** A syscall refused when its flags argument asks for a new user namespace. */
interface NamespaceRule {
  nr: number;
  flags: number;
}

interface AbiTable {
  auditArch: number;
  rules: ModeRule[];
  namespaces: NamespaceRule[];
  unfilterable: number[];
  /** Syscall numbers at or above this belong to another ABI (x32 on x86_64). */
  foreignFrom?: number;
}

const ABIS: Record<string, AbiTable> = {
  x64: {
    auditArch: 0xc000003e, // AUDIT_ARCH_X86_64
    rules: [
      { nr: 90, mode: 1 }, // chmod(path, mode)
      { nr: 91, mode: 1 }, // fchmod(fd, mode)
      { nr: 268, mode: 2 }, // fchmodat(dfd, path, mode)
      { nr: 452, mode: 2 }, // fchmodat2(dfd, path, mode, flags)
      { nr: 85, mode: 1 }, // creat(path, mode)
      { nr: 2, flags: 1, mode: 2 }, // open(path, flags, mode)
      { nr: 257, flags: 2, mode: 3 }, // openat(dfd, path, flags, mode)
      { nr: 133, mode: 1 }, // mknod(path, mode, dev)
      { nr: 259, mode: 2 }, // mknodat(dfd, path, mode, dev)
    ],
    namespaces: [
      { nr: 56, flags: 0 }, // clone(flags, ...)
      { nr: 272, flags: 0 }, // unshare(flags)
    ],
    unfilterable: [437, 425, 426, 427, 435], // openat2, io_uring_setup/enter/register, clone3 (its flags are in memory)
    foreignFrom: 0x40000000,
  },
  arm64: {
    auditArch: 0xc00000b7, // AUDIT_ARCH_AARCH64
    rules: [
      { nr: 52, mode: 1 }, // fchmod
      { nr: 53, mode: 2 }, // fchmodat
      { nr: 452, mode: 2 }, // fchmodat2
      { nr: 56, flags: 2, mode: 3 }, // openat
      { nr: 33, mode: 2 }, // mknodat
    ],
    namespaces: [
      { nr: 220, flags: 0 }, // clone(flags, ...)
      { nr: 97, flags: 0 }, // unshare(flags)
    ],
    unfilterable: [437, 425, 426, 427, 435],
  },
};

/** Whether this machine's ABI has a filter (x86_64 and aarch64). */
export function seccompSupported(machine = arch()): boolean {
  return machine in ABIS;
}

// Classic BPF opcodes.
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;

type Insn = { code: number; jt: string | number; jf: string | number; k: number } | { label: string };

const argLow = (i: number) => 16 + 8 * i; // seccomp_data.args[i], low 32 bits (little-endian)

/** The program as bytes: `struct sock_filter[]` (u16 code, u8 jt, u8 jf, u32 k), little-endian. */
export function seccompProgram(machine = arch()): Buffer {
  const abi = ABIS[machine];
  if (!abi) throw new Error(`no seccomp filter for architecture ${machine}`);
  const prog: Insn[] = [];
  const op = (code: number, k: number, jt: string | number = 0, jf: string | number = 0) => prog.push({ code, jt, jf, k });

  op(LD_W_ABS, 4); // arch
  op(JEQ_K, abi.auditArch, 0, 'deny');
  op(LD_W_ABS, 0); // nr
  if (abi.foreignFrom !== undefined) op(JGE_K, abi.foreignFrom, 'deny', 0);
  for (const nr of abi.unfilterable) op(JEQ_K, nr, 'enosys', 0);
  abi.rules.forEach((r, i) => op(JEQ_K, r.nr, `rule${i}`, 0));
  abi.namespaces.forEach((r, i) => op(JEQ_K, r.nr, `ns${i}`, 0));
  op(RET_K, RET_ALLOW);
  abi.namespaces.forEach((r, i) => {
    prog.push({ label: `ns${i}` });
    op(LD_W_ABS, argLow(r.flags));
    op(JSET_K, CLONE_NEWUSER, 'deny', 'allow');
  });
  abi.rules.forEach((r, i) => {
    prog.push({ label: `rule${i}` });
    if (r.flags !== undefined) {
      op(LD_W_ABS, argLow(r.flags));
      op(JSET_K, O_CREAT_OR_TMPFILE, 0, 'allow');
    }
    op(LD_W_ABS, argLow(r.mode));
    op(JSET_K, S_ISUID_OR_ISGID, 'deny', 'allow');
  });
  prog.push({ label: 'allow' });
  op(RET_K, RET_ALLOW);
  prog.push({ label: 'deny' });
  op(RET_K, retErrno(EPERM));
  prog.push({ label: 'enosys' });
  op(RET_K, retErrno(ENOSYS));
  return assemble(prog);
}

/** Resolves labels to relative forward jumps (a jump offset counts instructions after the next one). */
function assemble(prog: Insn[]): Buffer {
  const at = new Map<string, number>();
  let n = 0;
  for (const i of prog) {
    if ('label' in i) at.set(i.label, n);
    else n++;
  }
  const out = Buffer.alloc(n * 8);
  let pc = 0;
  for (const i of prog) {
    if ('label' in i) continue;
    const rel = (j: string | number) => {
      if (typeof j === 'number') return j;
      const target = at.get(j);
      if (target === undefined) throw new Error(`seccomp: no label ${j}`);
      const off = target - pc - 1;
      if (off < 0 || off > 255) throw new Error(`seccomp: jump to ${j} out of range (${off})`);
      return off;
    };
    out.writeUInt16LE(i.code, pc * 8);
    out.writeUInt8(rel(i.jt), pc * 8 + 2);
    out.writeUInt8(rel(i.jf), pc * 8 + 3);
    out.writeUInt32LE(i.k >>> 0, pc * 8 + 4);
    pc++;
  }
  return out;
}
