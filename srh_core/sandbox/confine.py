"""Kernel-level confinement applied by the bootstrap inside the child.

Runs in the sandboxed child before user code, so it uses the standard library
only (the child is started with ``-I -S`` and does not import ``srh_core``).
Each function applies one mechanism, returns whether it took effect and never
raises: a mechanism the kernel lacks is skipped and reported, not fatal.

- :func:`apply_rlimits`: address space, CPU, file size, open files, core dumps,
  processes. Root ignores RLIMIT_NPROC, hence seccomp below.
- :func:`apply_landlock`: Landlock (Linux >= 5.13) file-system allow-list:
  read-only hierarchies (interpreter, site-packages, read-only mounts, system
  libraries for ``dlopen``), read-write hierarchies (run directory,
  workspace); from ABI 4 all TCP bind/connect is refused, from ABI 6 signals
  and abstract unix sockets outside the sandbox are refused. Irreversible and
  inherited; applies to root too.
- :func:`apply_seccomp`: seccomp-bpf (x86_64 only) returning EPERM for process
  creation (fork, vfork, execve, clone without CLONE_THREAD), ``socket``,
  signals to other processes, ptrace, mounts, namespaces, module loading,
  io_uring (which bypasses seccomp) and similar host-level operations, and
  for any mode with the setuid or setgid bit: chmod and its variants, and
  open/openat/creat creating a file (the child may run as root, and such a
  file left in the workspace would run as root for whoever starts it);
  openat2, whose mode seccomp cannot read, gets ENOSYS (callers fall back).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import stat
import struct

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# Landlock syscalls and flags (include/uapi/linux/landlock.h).
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 16, 32, 64, 128
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK = 256, 512, 1024, 2048
FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 4096, 8192, 16384, 32768
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2

READ_DIR_RIGHTS = FS_READ_FILE | FS_READ_DIR
READ_FILE_RIGHTS = FS_READ_FILE
# Devices such as /dev/null are written and truncated by ordinary code.
DEVICE_RIGHTS = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE
# No device nodes, fifos, sockets or symlinks: none is needed to fit a
# formula, and each is a classic way to confuse whoever reads the workspace.
WRITE_DIR_RIGHTS = (
    FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR | FS_REMOVE_DIR | FS_REMOVE_FILE
    | FS_MAKE_DIR | FS_MAKE_REG | FS_REFER | FS_TRUNCATE
)

#: System library locations the dynamic loader reads when an extension
#: module pulls in e.g. libstdc++ after confinement (Landlock only; the
#: audit hook still refuses Python-level reads there).
SYSTEM_LIBRARY_PATHS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache")

# seccomp-bpf (include/uapi/linux/seccomp.h, filter.h, audit.h).
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
SECCOMP_DATA_NR, SECCOMP_DATA_ARCH, SECCOMP_DATA_ARG0 = 0, 4, 16
CLONE_THREAD = 0x00010000
ENOSYS = 38
EPERM = 1
#: Mode bits no file made or changed in the sandbox may carry (S_ISUID | S_ISGID).
PRIVILEGE_MODE_BITS = stat.S_ISUID | stat.S_ISGID
#: Open flags under which the mode argument is used: O_CREAT and O_TMPFILE's own bit.
CREATING_OPEN_FLAGS = os.O_CREAT | 0o20000000

X86_64_CLONE, X86_64_CLONE3, X86_64_KILL, X86_64_TGKILL = 56, 435, 62, 234
X86_64_OPENAT2 = 437
#: syscall -> index of its mode argument (chmod fchmod fchmodat fchmodat2 creat).
X86_64_MODE_SYSCALLS = {90: 1, 91: 1, 268: 2, 452: 2, 85: 1}
#: syscall -> (index of its flags argument, index of its mode argument) (open openat).
X86_64_OPEN_SYSCALLS = {2: (1, 2), 257: (2, 3)}
#: Syscalls refused with EPERM: process creation and replacement, sockets,
#: other processes, privileged host operations, and io_uring.
X86_64_DENIED_SYSCALLS = (
    57, 58, 59, 322,  # fork vfork execve execveat
    41, 49, 50,  # socket bind listen
    200, 101, 310, 311,  # tkill ptrace process_vm_readv process_vm_writev
    424, 438, 440,  # pidfd_send_signal pidfd_getfd process_madvise
    165, 166, 155, 161,  # mount umount2 pivot_root chroot
    428, 429, 430, 431, 432, 433, 442,  # new mount API
    272, 308,  # unshare setns
    321, 298, 323,  # bpf perf_event_open userfaultfd
    425, 426, 427,  # io_uring_setup io_uring_enter io_uring_register
    175, 313, 176, 246, 320,  # init/finit/delete_module kexec_load kexec_file_load
    169, 167, 168, 170, 171,  # reboot swapon swapoff sethostname setdomainname
    248, 249, 250,  # add_key request_key keyctl
    92, 93, 94, 260,  # chown fchown lchown fchownat
    133, 259, 303, 304,  # mknod mknodat name_to_handle_at open_by_handle_at
    163, 164, 227, 159, 172, 173, 179, 300,  # acct time/clock setters iopl ioperm quotactl fanotify
)


def apply_rlimits(limits: dict[str, int]) -> bool:
    """Set soft and hard limits; ``limits`` maps RLIMIT names to values."""
    try:
        for name, value in limits.items():
            hard = value + 1 if name == "RLIMIT_CPU" else value
            # RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL one second later
            # in case the program ignores SIGXCPU.
            resource.setrlimit(getattr(resource, name), (value, hard))
    except (OSError, ValueError, AttributeError):
        return False
    return True


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def set_no_new_privs(libc: ctypes.CDLL) -> bool:
    """Forbid gaining privileges on exec; required by Landlock and seccomp."""
    return libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0


def landlock_abi(libc: ctypes.CDLL) -> int:
    """Return the kernel's Landlock ABI version, or 0 when unavailable."""
    version = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                           ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _ruleset_attr(abi: int) -> bytes:
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", _handled_fs(abi), net, scoped)
    # Older kernels reject a struct larger than the one they know.
    return attr[: 8 if abi < 4 else 16 if abi < 6 else 24]


def _add_path_rule(libc: ctypes.CDLL, ruleset_fd: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a missing optional path (e.g. /lib64) is simply not granted
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        allowed = rights if is_dir else rights & (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE)
        rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd), 12)
        libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, rule, 0)
    finally:
        os.close(fd)


def apply_landlock(
    read_paths: list[str], write_paths: list[str], device_paths: list[str]
) -> bool:
    """Restrict the file system (and TCP, signals) to the given hierarchies.

    Args:
        read_paths: Hierarchies readable but not writable.
        write_paths: Hierarchies readable and writable.
        device_paths: Device files opened read-write (``/dev/null``...).

    Returns:
        True when the Landlock domain is in force.
    """
    try:
        libc = _libc()
        abi = landlock_abi(libc)
        if abi < 1 or not set_no_new_privs(libc):
            return False
        mask = _handled_fs(abi)
        attr = _ruleset_attr(abi)
        ruleset_fd = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, ctypes.c_size_t(len(attr)),
                                  ctypes.c_uint32(0))
        if ruleset_fd < 0:
            return False
        for paths, rights in ((read_paths, READ_DIR_RIGHTS), (write_paths, WRITE_DIR_RIGHTS),
                              (device_paths, DEVICE_RIGHTS)):
            for path in paths:
                _add_path_rule(libc, int(ruleset_fd), path, rights & mask)
        done = libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, int(ruleset_fd), ctypes.c_uint32(0)) == 0
        os.close(int(ruleset_fd))
        return done
    except (OSError, AttributeError, ValueError):
        return False


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _allow_if_arg0(syscall: int, values: tuple[int, ...]) -> list[bytes]:
    """Allow ``syscall`` only when its first argument is one of ``values``."""
    body = [_bpf(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARG0)]
    for index, value in enumerate(values):
        body.append(_bpf(BPF_JEQ_K, len(values) - index, 0, value))
    body += [_bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM), _bpf(BPF_RET_K, 0, 0,
                                                                   SECCOMP_RET_ALLOW)]
    return [_bpf(BPF_JEQ_K, 0, len(body), syscall), *body]


def _arg(index: int) -> int:
    """Offset of the low 32 bits of syscall argument ``index`` (little endian)."""
    return SECCOMP_DATA_ARG0 + 8 * index


def _refuse_privileged_mode(syscall: int, mode_index: int,
                            flags_index: int | None = None) -> list[bytes]:
    """EPERM for ``syscall`` when its mode has setuid/setgid bits (and, for an open,
    when its flags create a file); any other call of it is allowed."""
    body = []
    if flags_index is not None:
        # No creating flag: skip the mode check (3 instructions) to the ALLOW.
        body += [_bpf(BPF_LD_W_ABS, 0, 0, _arg(flags_index)),
                 _bpf(BPF_JSET_K, 0, 3, CREATING_OPEN_FLAGS)]
    body += [_bpf(BPF_LD_W_ABS, 0, 0, _arg(mode_index)),
             _bpf(BPF_JSET_K, 0, 1, PRIVILEGE_MODE_BITS),
             _bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),
             _bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]
    return [_bpf(BPF_JEQ_K, 0, len(body), syscall), *body]


def _mode_rules() -> list[bytes]:
    """The setuid/setgid rules; a rule for another syscall leaves its number loaded."""
    rules = [_bpf(BPF_JEQ_K, 0, 1, X86_64_OPENAT2), _bpf(BPF_RET_K, 0, 0,
                                                          SECCOMP_RET_ERRNO | ENOSYS)]
    for syscall, mode_index in X86_64_MODE_SYSCALLS.items():
        rules += _refuse_privileged_mode(syscall, mode_index)
    for syscall, (flags_index, mode_index) in X86_64_OPEN_SYSCALLS.items():
        rules += _refuse_privileged_mode(syscall, mode_index, flags_index)
    return rules


def seccomp_program(own_pid: int) -> bytes:
    """Build the x86_64 filter; see the module docstring for what it refuses."""
    deny = _bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM)
    program = [
        _bpf(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        _bpf(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _bpf(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        _bpf(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
        _bpf(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT),
        deny,
        # glibc falls back from clone3 to clone on ENOSYS, where flags are visible.
        _bpf(BPF_JEQ_K, 0, 1, X86_64_CLONE3),
        _bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS),
        # clone is allowed for threads only.
        _bpf(BPF_JEQ_K, 0, 4, X86_64_CLONE),
        _bpf(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARG0),
        _bpf(BPF_JSET_K, 0, 1, CLONE_THREAD),
        _bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        deny,
        *_allow_if_arg0(X86_64_KILL, (own_pid, 0)),
        *_allow_if_arg0(X86_64_TGKILL, (own_pid,)),
        _bpf(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
        *_mode_rules(),
    ]
    for number in X86_64_DENIED_SYSCALLS:
        program += [_bpf(BPF_JEQ_K, 0, 1, number), deny]
    program.append(_bpf(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return b"".join(program)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def apply_seccomp(own_pid: int) -> bool:
    """Install the seccomp filter; returns False on other architectures or errors."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        libc = _libc()
        if not set_no_new_privs(libc):
            return False
        code = seccomp_program(own_pid)
        buffer = ctypes.create_string_buffer(code, len(code))
        prog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0
    except (OSError, AttributeError, ValueError):
        return False
