/// Production, or Sandbox when explicitly allowed (TestFlight and
/// development builds run in Sandbox). `Xcode` and `LocalTesting` are never
/// accepted: StoreKit testing signs them with its own key, not Apple's.
public struct EnvironmentCheck: PayloadCheck {
    public var allowSandbox: Bool
    public var reason: ProofReason { .wrongEnvironment }

    public static let production = "Production"
    public static let sandbox = "Sandbox"

    public init(allowSandbox: Bool) { self.allowSandbox = allowSandbox }

    public func failure(_ p: SignedPayload, now: Timestamp) -> String? {
        guard let env = p.environment else { return "payload has no environment; expected \"Production\"" }
        switch env {
        case EnvironmentCheck.production: return nil
        case EnvironmentCheck.sandbox:
            return allowSandbox ? nil : "environment is \"Sandbox\"; only \"Production\" is accepted unless sandbox proofs are allowed"
        case "Xcode", "LocalTesting":
            return "environment is \(ProofFailure.quote(env)): StoreKit testing, not signed by Apple; never accepted"
        default:
            return "environment is \(ProofFailure.quote(env)); expected \"Production\"" + (allowSandbox ? " or \"Sandbox\"" : "")
        }
    }
}
