import Foundation
import Synchronization

/// A BUSY reply to a latecomer, run on its own thread. It touches no store:
/// the handshake never uses a PSK (so it needs no key) and the client, seeing
/// an unauthenticated session, reads just this one notice.
final class BusyReply: @unchecked Sendable {
    private let socket: TCPSocket
    private let context: TLSContext

    init(socket: TCPSocket, context: TLSContext) {
        self.socket = socket
        self.context = context
    }

    func run() {
        guard let conn = try? TLSConnection(server: socket, context: context, lookup: { _ in .noKey }) else { return }
        guard (try? conn.handshake(deadline: Deadline(after: SyncLimits.handshakeTimeout))) != nil else { return }
        let channel = FrameChannel(conn)
        channel.send(.busy, json: .object([("retryAfterMs", .int(SyncLimits.busyRetryHint.milliseconds)),
                                           ("message", .string("this device is syncing with another one"))]))
        try? channel.drain(deadline: Deadline(after: SyncLimits.closeTimeout))
        _ = conn.shutdown(deadline: Deadline(after: TimeSpan.seconds(1)))
        socket.close()
    }
}

/// How many busy replies are being sent right now (shared with their threads).
final class BusyCounter: Sendable {
    private let count = Mutex(0)
    func enter() -> Bool {
        count.withLock { n in
            guard n < SyncLimits.maxBusyResponders else { return false }
            n += 1
            return true
        }
    }
    func leave() { count.withLock { $0 -= 1 } }
}
