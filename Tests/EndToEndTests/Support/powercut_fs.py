"""A file system for power-cut tests: writes stay in memory until fsync.

    python3 powercut_fs.py DISK MOUNTPOINT [--cut-at-fsync K] [--cut-at-write K] [--fail-fsync]
                           [--count-after-sigusr1] [--count NAME]...

DISK is an ordinary folder standing for the platters: only what was fsynced
reaches it. A file's contents reach DISK when the file is fsynced; a name
made, renamed or removed in a folder reaches DISK when that folder is fsynced
(as POSIX promises, and no more). Everything else lives in this process's
memory, so killing it (SIGKILL) is a power cut, and mounting DISK again is the
reboot: the tree is what was synced, nothing newer.

With --cut-at-fsync K (or --cut-at-write K) the power goes at the K-th fsync
(or write) of a file whose name is one of the --count names: that call never
completes, the process exits at once and leaves DISK/cut.json saying where.
With --count-after-sigusr1 the counting starts at SIGUSR1 (a session about
to begin), not at the mount. With --fail-fsync every fsync of a counted file fails with EIO (a dying disk).
On a clean unmount DISK/counts.json holds how many of each were seen.

Files are numbered (inodes); DISK/manifest.json holds each folder's synced
entries and each file's mode, DISK/blobs/N the N-th file's synced bytes.
"""

import errno
import json
import os
import signal
import stat
import sys
import threading
import time

import mfusepy as fuse

ROOT = 1


class Node:
    __slots__ = ("ino", "mode", "data", "children", "uid", "gid", "mtime")

    def __init__(self, ino, mode, data=None, children=None):
        self.ino = ino
        self.mode = mode
        self.data = data
        self.children = children
        self.uid = 0
        self.gid = 0
        self.mtime = time.time()

    @property
    def is_dir(self):
        return self.children is not None


class PowerCutFS(fuse.Operations):
    use_ns = True

    def __init__(self, disk, counted, cut_fsync, cut_write, fail_fsync=False):
        self.disk = os.path.abspath(disk)
        self.fail_fsync = fail_fsync
        self.counting = True
        self.counted = set(counted)
        self.cut_fsync = cut_fsync
        self.cut_write = cut_write
        self.fsyncs = 0
        self.writes = 0
        self.mutex = threading.Lock()
        os.makedirs(os.path.join(disk, "blobs"), exist_ok=True)
        self.durable_dirs = {ROOT: {}}
        self.durable_modes = {ROOT: stat.S_IFDIR | 0o755}
        self.next_ino = 2
        manifest = os.path.join(disk, "manifest.json")
        if os.path.exists(manifest):
            with open(manifest) as f:
                m = json.load(f)
            self.durable_dirs = {int(k): {n: int(i) for n, i in v.items()} for k, v in m["dirs"].items()}
            self.durable_modes = {int(k): v for k, v in m["modes"].items()}
            self.next_ino = m["next"]
        self.nodes = {}
        self.root = self._load(ROOT)

    # The tree as it was last synced.
    def _load(self, ino):
        mode = self.durable_modes.get(ino, stat.S_IFREG | 0o600)
        if stat.S_ISDIR(mode):
            node = Node(ino, mode, children={})
            for name, child in self.durable_dirs.get(ino, {}).items():
                node.children[name] = self._load(child)
        else:
            blob = os.path.join(self.disk, "blobs", str(ino))
            data = bytearray()
            if os.path.exists(blob):
                with open(blob, "rb") as f:
                    data = bytearray(f.read())
            node = Node(ino, mode, data=data)
        self.nodes[ino] = node
        return node

    def _save_manifest(self):
        m = {"dirs": {str(k): v for k, v in self.durable_dirs.items()},
             "modes": {str(k): v for k, v in self.durable_modes.items()}, "next": self.next_ino}
        tmp = os.path.join(self.disk, "manifest.json.tmp")
        with open(tmp, "w") as f:
            json.dump(m, f)
        os.replace(tmp, os.path.join(self.disk, "manifest.json"))

    def _cut(self, what, k, path):
        with open(os.path.join(self.disk, "cut.json"), "w") as f:
            json.dump({"at": what, "k": k, "path": path}, f)
        os._exit(0)

    def _counted(self, path):
        return self.counting and os.path.basename(path) in self.counted

    def _find(self, path):
        node = self.root
        for part in [p for p in path.split("/") if p]:
            if not node.is_dir or part not in node.children:
                raise fuse.FuseOSError(errno.ENOENT)
            node = node.children[part]
        return node

    def _parent(self, path):
        parent, name = os.path.split(path.rstrip("/"))
        node = self._find(parent or "/")
        if not node.is_dir:
            raise fuse.FuseOSError(errno.ENOTDIR)
        return node, name

    def _new(self, mode, is_dir):
        ino = self.next_ino
        self.next_ino += 1
        node = Node(ino, mode, data=None if is_dir else bytearray(), children={} if is_dir else None)
        self.nodes[ino] = node
        return node

    # Metadata.
    def getattr(self, path, fh=None):
        with self.mutex:
            n = self._find(path)
            ns = int(n.mtime * 1e9)
            return {"st_mode": n.mode, "st_ino": n.ino, "st_nlink": 2 if n.is_dir else 1,
                    "st_size": 0 if n.is_dir else len(n.data), "st_uid": n.uid, "st_gid": n.gid,
                    "st_atime": ns, "st_mtime": ns, "st_ctime": ns, "st_blksize": 4096,
                    "st_blocks": 0 if n.is_dir else (len(n.data) + 511) // 512}

    def access(self, path, amode):
        with self.mutex:
            self._find(path)
        return 0

    def readdir(self, path, fh):
        with self.mutex:
            n = self._find(path)
            return [".", ".."] + list(n.children)

    def statfs(self, path):
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": 1 << 20, "f_bfree": 1 << 19,
                "f_bavail": 1 << 19, "f_files": 1 << 16, "f_ffree": 1 << 15, "f_namemax": 255}

    def chmod(self, path, mode):
        with self.mutex:
            n = self._find(path)
            n.mode = (n.mode & ~0o7777) | (mode & 0o7777)
        return 0

    def chown(self, path, uid, gid):
        with self.mutex:
            n = self._find(path)
            if uid != -1 and uid != 0xFFFFFFFF:
                n.uid = uid
            if gid != -1 and gid != 0xFFFFFFFF:
                n.gid = gid
        return 0

    def utimens(self, path, times=None):
        with self.mutex:
            self._find(path).mtime = time.time()
        return 0

    # The namespace: in memory until the folder is synced.
    def mkdir(self, path, mode):
        with self.mutex:
            parent, name = self._parent(path)
            if name in parent.children:
                raise fuse.FuseOSError(errno.EEXIST)
            parent.children[name] = self._new(stat.S_IFDIR | (mode & 0o7777), True)
        return 0

    def create(self, path, mode, fi=None):
        with self.mutex:
            parent, name = self._parent(path)
            if name not in parent.children:
                parent.children[name] = self._new(stat.S_IFREG | (mode & 0o7777), False)
        return 0

    def open(self, path, flags):
        with self.mutex:
            self._find(path)
        return 0

    def opendir(self, path):
        with self.mutex:
            self._find(path)
        return 0

    def unlink(self, path):
        with self.mutex:
            parent, name = self._parent(path)
            if name not in parent.children:
                raise fuse.FuseOSError(errno.ENOENT)
            del parent.children[name]
        return 0

    def rmdir(self, path):
        with self.mutex:
            parent, name = self._parent(path)
            n = parent.children.get(name)
            if n is None:
                raise fuse.FuseOSError(errno.ENOENT)
            if n.children:
                raise fuse.FuseOSError(errno.ENOTEMPTY)
            del parent.children[name]
        return 0

    def rename(self, old, new):
        with self.mutex:
            op, on = self._parent(old)
            np_, nn = self._parent(new)
            if on not in op.children:
                raise fuse.FuseOSError(errno.ENOENT)
            np_.children[nn] = op.children.pop(on)
        return 0

    def fsyncdir(self, path, datasync, fh):
        with self.mutex:
            n = self._find(path)
            self.durable_dirs[n.ino] = {name: c.ino for name, c in n.children.items()}
            for c in n.children.values():
                self.durable_modes[c.ino] = c.mode
                if c.is_dir:
                    self.durable_dirs.setdefault(c.ino, {})
            self._save_manifest()
        return 0

    # Contents: in memory until the file is synced.
    def read(self, path, size, offset, fh):
        with self.mutex:
            return bytes(self._find(path).data[offset:offset + size])

    def write(self, path, data, offset, fh):
        with self.mutex:
            if self._counted(path):
                self.writes += 1
                if self.writes == self.cut_write:
                    self._cut("write", self.writes, path)
            d = self._find(path).data
            if offset > len(d):
                d.extend(b"\0" * (offset - len(d)))
            d[offset:offset + len(data)] = data
            return len(data)

    def truncate(self, path, length, fh=None):
        with self.mutex:
            d = self._find(path).data
            if length < len(d):
                del d[length:]
            else:
                d.extend(b"\0" * (length - len(d)))
        return 0

    def fsync(self, path, datasync, fh):
        with self.mutex:
            if self._counted(path):
                self.fsyncs += 1
                if self.fsyncs == self.cut_fsync:
                    self._cut("fsync", self.fsyncs, path)
                if self.fail_fsync:
                    raise fuse.FuseOSError(errno.EIO)
            n = self._find(path)
            tmp = os.path.join(self.disk, "blobs", "%d.tmp" % n.ino)
            with open(tmp, "wb") as f:
                f.write(n.data)
            os.replace(tmp, os.path.join(self.disk, "blobs", str(n.ino)))
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0

    def releasedir(self, path, fh):
        return 0

    def destroy(self, path):
        with open(os.path.join(self.disk, "counts.json"), "w") as f:
            json.dump({"fsyncs": self.fsyncs, "writes": self.writes}, f)


def main(argv):
    args = list(argv)
    counted, cut_fsync, cut_write, fail_fsync, armed_later = [], 0, 0, False, False
    positional = []
    while args:
        a = args.pop(0)
        if a == "--count":
            counted.append(args.pop(0))
        elif a == "--cut-at-fsync":
            cut_fsync = int(args.pop(0))
        elif a == "--cut-at-write":
            cut_write = int(args.pop(0))
        elif a == "--fail-fsync":
            fail_fsync = True
        elif a == "--count-after-sigusr1":
            armed_later = True
        else:
            positional.append(a)
    if len(positional) != 2:
        sys.exit("usage: powercut_fs.py DISK MOUNTPOINT [--cut-at-fsync K] [--cut-at-write K] [--fail-fsync] "
                 "[--count-after-sigusr1] [--count NAME]...")
    disk, mountpoint = positional
    fs = PowerCutFS(disk, counted, cut_fsync, cut_write, fail_fsync)
    if armed_later:
        fs.counting = False
        # Runs on this (the only) thread before the next request is served.
        signal.signal(signal.SIGUSR1, lambda *_: setattr(fs, "counting", True))
    fuse.FUSE(fs, mountpoint, foreground=True, nothreads=True, fsname="powercut")


if __name__ == "__main__":
    main(sys.argv[1:])
