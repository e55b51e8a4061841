/// A record that is not valid, and where it is: a line of a named input
/// (`file`:`line`), or a record by its id. `problem` says which field and what.
public struct RecordLineError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Line `line` of `file`.
        case line
        /// The record whose id is `record` (cut to 100 characters).
        case record
    }

    public var kind: Kind
    public var file: String
    public var line: Int
    public var record: String
    public var problem: RecordError

    public init(file: String, line: Int, _ problem: RecordError) {
        self.kind = .line
        self.file = file
        self.line = line
        self.record = ""
        self.problem = problem
    }

    public init(record id: some StringProtocol, _ problem: RecordError) {
        self.kind = .record
        self.file = ""
        self.line = 0
        self.record = String(id.prefix(100))
        self.problem = problem
    }

    public var description: String {
        switch kind {
        case .line: return "\(file):\(line): \(problem)"
        case .record: return "record \(record): \(problem)"
        }
    }
}
