/// The exit statuses every tool uses, the table in every man page
/// (BSD sysexits where one fits).
public enum ExitStatus: Int32, Sendable, CaseIterable {
    case success = 0
    /// A negative verdict: invalid proof, nothing decoded, free tier.
    case negative = 1
    case usage = 64
    case dataError = 65
    case noInput = 66
    case unavailable = 69
    case software = 70
    case ioError = 74
    case tempFail = 75
    case noPermission = 77
    /// 128 + SIGINT, as a shell reports a program a signal ended.
    case interrupted = 130
    /// 128 + SIGPIPE: whoever read standard output closed it (`| head`).
    case closedPipe = 141
    /// 128 + SIGTERM.
    case terminated = 143

    /// The line each man page's EXIT STATUS section shows.
    public var meaning: String {
        switch self {
        case .success: return "success"
        case .negative: return "negative verdict: invalid proof, nothing decoded, free tier"
        case .usage: return "usage error: unknown option, bad argument"
        case .dataError: return "bad input data: a malformed record, offer, image or store"
        case .noInput: return "an input file does not exist or cannot be opened"
        case .unavailable: return "the peer is unavailable: nobody listening, no reply"
        case .software: return "internal error"
        case .ioError: return "I/O error, including a failed write to standard output"
        case .tempFail: return "temporary failure: the peer is busy, retry later"
        case .noPermission: return "authentication refused: bad secret, used or expired offer, revoked device"
        case .interrupted: return "interrupted by SIGINT (Ctrl-C); one line on standard error says what was kept"
        case .closedPipe: return "standard output was closed by its reader (a pipe into head): the tool stopped quietly"
        case .terminated: return "stopped by SIGTERM; one line on standard error says what was kept"
        }
    }
}

/// An error that ends a tool with a given status and a one-line message.
/// The message names the file, line and field where there is one, and never
/// contains secret material.
public struct ToolError: Error, CustomStringConvertible, Sendable {
    public var status: ExitStatus
    public var message: String
    /// The command a usage error is about, when it was known before the
    /// arguments were all parsed (its usage line is the one shown).
    public var commandPath: [String]?
    public init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }
    public var description: String { message }

    public static func usage(_ m: String) -> ToolError { ToolError(.usage, m) }
    public static func data(_ m: String) -> ToolError { ToolError(.dataError, m) }
    public static func io(_ m: String) -> ToolError { ToolError(.ioError, m) }
    public static func noInput(_ m: String) -> ToolError { ToolError(.noInput, m) }
    public static func `internal`(_ m: String) -> ToolError { ToolError(.software, m) }
}
