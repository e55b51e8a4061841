import FoundationEssentials
import FamilySync
import Glibc

/// What a command that may create a store finds at its path before it
/// starts, so that on failure it can take away exactly what it made: the
/// store file, SQLite's -wal and -shm beside it, and any folders it created
/// for them, never anything that was there before.
struct NewStoreFootprint {
    let path: String
    let existedBefore: Bool
    /// Folders that did not exist, deepest first.
    let missingFolders: [String]

    init(path: String) {
        self.path = path
        var st = stat()
        existedBefore = lstat(path, &st) == 0
        var missing: [String] = []
        var dir = PathText.directory(path)
        while !dir.isEmpty, dir != "/", lstat(dir, &st) != 0, errno == ENOENT {
            missing.append(dir)
            dir = PathText.directory(dir)
        }
        missingFolders = missing
    }

    /// Removes the store's files and the folders made for it (only while empty).
    func remove() {
        guard !existedBefore else { return }
        for suffix in Store.companionSuffixes + [""] { _ = unlink(path + suffix) }
        for dir in missingFolders where rmdir(dir) != 0 { break }
    }
}
