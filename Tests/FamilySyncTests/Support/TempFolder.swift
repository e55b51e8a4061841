import Foundation

/// A fresh folder of its own under the temporary directory, removed with
/// everything in it when the last reference goes.
final class TempFolder {
    let path: String

    init(_ prefix: String = "fs-test") {
        var template = Array((NSTemporaryDirectory() + "/\(prefix).XXXXXX").utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
