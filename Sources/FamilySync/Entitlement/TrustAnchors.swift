import Foundation

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
    /// A missing file is `noInput`; one that holds no certificate is `dataError`.
    public static func load(paths: [String]) throws -> [X509Certificate] {
        var out: [X509Certificate] = []
        for path in paths {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let e = errno
                throw ToolError(FileIO.openFailureStatus(e),
                                "--root \(path): \(String(cString: strerror(e)))")
            }
            defer { close(fd) }
            var st = stat()
            if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { throw ToolError(.noInput, "--root \(path): is a directory") }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                // Never nil: the chunk is 64 KiB.
                let n = chunk.withUnsafeMutableBytes { FileIO.read(fd, into: $0.baseAddress!, count: $0.count) }
                if n < 0 {
                    throw ToolError(.ioError, "--root \(path): read error: \(String(cString: strerror(errno)))")
                }
                if n == 0 { break }
                bytes.append(contentsOf: chunk[0..<n])
                if bytes.count > maxFileBytes { throw ToolError(.dataError, "--root \(path): larger than \(maxFileBytes) bytes; not a certificate file") }
            }
            do {
                out.append(contentsOf: try X509Certificate.load(contents: bytes))
            } catch {
                throw ToolError(.dataError, "--root \(path): not a DER or PEM certificate: \(error)")
            }
        }
        return out
    }
}
