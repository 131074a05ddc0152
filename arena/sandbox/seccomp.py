"""The seccomp filter of every sandbox: system calls a card game bot never needs, refused.

The namespaces and a uid of its own already keep a bot away from the host; the filter
narrows what of the kernel it can reach at all (the kernel's own attack surface): loading
BPF programs, perf events, keyrings, ptrace, io_uring, mounting, new namespaces, kernel
modules and clocks. Refused calls fail with EPERM rather than killing the process, so a
runtime that probes for a feature (Node.js does) goes on without it.

The filter is compiled once per host with libseccomp (through ``pyseccomp``) into a BPF
file that bubblewrap loads (``--seccomp FD``).
"""

from __future__ import annotations

import errno

#: System calls refused inside the sandbox (names unknown to this libseccomp are skipped).
DENIED = (
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
    "delete_module", "finit_module", "fanotify_init", "fsconfig", "fsmount", "fsopen",
    "fspick", "get_kernel_syms", "init_module", "io_uring_enter", "io_uring_register",
    "io_uring_setup", "ioperm", "iopl", "kcmp", "kexec_file_load", "kexec_load", "keyctl",
    "lookup_dcookie", "mount", "mount_setattr", "move_mount", "name_to_handle_at",
    "nfsservctl", "open_by_handle_at", "open_tree", "perf_event_open", "pivot_root",
    "process_vm_readv", "process_vm_writev", "ptrace", "query_module", "quotactl",
    "reboot", "request_key", "setns", "settimeofday", "stime", "swapoff", "swapon",
    "sysfs", "syslog", "umount", "umount2", "unshare", "uselib", "userfaultfd", "ustat",
    "vm86", "vm86old",
)


def compile_filter() -> bytes:
    """The filter as BPF bytes for this machine's architecture."""
    import tempfile

    import pyseccomp  # type: ignore[import-untyped]

    flt = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for name in DENIED:
        try:
            flt.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        except (ValueError, RuntimeError, OSError):
            continue  # not a system call on this architecture or libseccomp version
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.seek(0)
        return f.read()


def build() -> tuple[bytes | None, str]:
    """The filter (None when it cannot be built) and a line for ``arena doctor``; the host
    writes it into its state directory.

    Without libseccomp the sandbox still runs (namespaces, cgroups and the seat's uid are
    the isolation) and the doctor says the filter is missing.
    """
    try:
        data = compile_filter()
    except (ImportError, OSError, RuntimeError) as exc:
        return None, f"off: the filter cannot be built ({exc}); install libseccomp2"
    return data, f"on: {len(DENIED)} system calls refused (EPERM), no new user namespaces"
