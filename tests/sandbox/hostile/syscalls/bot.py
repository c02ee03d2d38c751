"""Hostile: calls kernel interfaces that local exploits start from and a bot never needs
(io_uring, eBPF, perf events, keyrings, userfaultfd, ptrace, process_vm_readv, the LDT,
secret memory, NUMA placement, inotify, a 32-bit system call), and reports the errno of
each (0: the call worked)."""

import ctypes
import os
import platform

from _serve import serve  # type: ignore[import-not-found]

# x86_64 numbers; on other machines the report says so and the test skips what it cannot ask.
CALLS = {
    "io_uring_setup": (425, (1, 0)),  # entries=1, params=NULL
    "bpf": (321, (0, 0, 0)),  # BPF_MAP_CREATE, attr=NULL
    "perf_event_open": (298, (0, 0, -1, -1, 0)),
    "keyctl": (250, (0, -3, 0)),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "add_key": (248, (0, 0, 0, 0, 0)),
    "userfaultfd": (323, (0,)),
    "ptrace": (101, (0x4206, 1, 0, 0)),  # PTRACE_SEIZE pid 1
    "process_vm_readv": (310, (1, 0, 0, 0, 0, 0)),
    "unshare": (272, (0x00020000,)),  # CLONE_NEWNS
    "mount": (165, (0, 0, 0, 0, 0)),
    "modify_ldt": (154, (0, 0, 0)),  # read 0 bytes of the LDT
    "memfd_secret": (447, (0,)),
    "mbind": (237, (0, 0, 0, 0, 0, 0)),
    "set_mempolicy": (238, (0, 0, 0)),  # MPOL_DEFAULT
    "move_pages": (279, (0, 0, 0, 0, 0, 0)),
    "migrate_pages": (256, (0, 0, 0, 0)),
    "inotify_init1": (294, (0,)),
    "inotify_add_watch": (254, (0, 0, 1)),  # IN_ACCESS on a NULL path, on fd 0
}


def legacy_getpid() -> int | str:
    """getpid through the 32-bit ABI (``int 0x80``), in a child in case the kernel has no
    32-bit emulation: its result (negative: an errno), or how the child died."""
    import mmap
    import struct

    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        code = bytes.fromhex("b814000000cd80c3")  # mov eax, 20; int 0x80; ret
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        result = ctypes.CFUNCTYPE(ctypes.c_int)(address)()
        os.write(write, struct.pack("i", result))
        os._exit(0)
    os.close(write)
    said = os.read(read, 4)
    _, status = os.waitpid(child, 0)
    if len(said) == 4:
        return int(struct.unpack("i", said)[0])
    return f"died: {status}"


def attempt() -> dict[str, object]:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    errors: dict[str, int] = {}
    if platform.machine() != "x86_64":
        return {"machine": platform.machine(), "errors": errors}
    for name, (number, args) in CALLS.items():
        ctypes.set_errno(0)
        result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
        errors[name] = 0 if result >= 0 else ctypes.get_errno()
        if result >= 0 and name in ("io_uring_setup", "userfaultfd", "perf_event_open"):
            os.close(result)
    return {
        "machine": platform.machine(),
        "errors": errors,
        "int80_getpid": legacy_getpid(),
        "seccomp_modes": seccomp_modes(),
    }


def seccomp_modes() -> dict[str, str]:
    """The seccomp mode and number of filters (``2/1``: one filter) of every process this
    bot can see, and its own under ``self``: a process with fewer filters (an init of the
    same uid outside the sandbox's filter) could be made to run the bot's code unfiltered."""
    modes: dict[str, str] = {}
    for entry in ["self", *os.listdir("/proc")]:
        if not (entry.isdigit() or entry == "self"):
            continue
        fields = {}
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8") as status:
                for line in status:
                    key, _, value = line.partition(":")
                    fields[key] = value.strip()
        except OSError:
            continue
        modes[entry] = f"{fields.get('Seccomp', '?')}/{fields.get('Seccomp_filters', '?')}"
    return modes


RESULT = attempt()
serve(lambda: RESULT)
