import FoundationEssentials
import Glibc

/// The roots a verifier pins: Apple Root CA - G3 (bundled) unless others
/// are given, in which case they replace it.
public enum TrustAnchors {
    /// The bundled Apple Root CA - G3.
    public static func appleRootCAG3() throws -> [X509Certificate] {
        [try X509Certificate(der: AppleRootCAG3.der)]
    }

    /// The biggest root file read; a certificate is a few kilobytes, a PEM
    /// bundle of them a few hundred.
    public static let maxFileBytes = 1 << 20

    /// Certificates from files, each DER or PEM (one or more certificates).
    /// A file that cannot be read is a `FileError`; one that holds no certificate a `ProofError`.
    public static func load(paths: [String]) throws -> [X509Certificate] {
        var out: [X509Certificate] = []
        for path in paths {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let e = errno
                throw FileError(.cannotOpen, path: path, code: e)
            }
            defer { close(fd) }
            var st = stat()
            if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { throw FileError(.isDirectory, path: path) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                // Never nil: the chunk is 64 KiB.
                let n = chunk.withUnsafeMutableBytes { FileIO.read(fd, into: $0.baseAddress!, count: $0.count) }
                if n < 0 {
                    throw FileError(.readFailed, path: path, code: errno)
                }
                if n == 0 { break }
                bytes.append(contentsOf: chunk[0..<n])
                if bytes.count > maxFileBytes { throw ProofError(.certificateFileTooLarge, path: path, limit: maxFileBytes) }
            }
            do {
                out.append(contentsOf: try X509Certificate.load(contents: bytes))
            } catch {
                throw ProofError(.notACertificate, path: path, detail: "\(error)")
            }
        }
        return out
    }
}
