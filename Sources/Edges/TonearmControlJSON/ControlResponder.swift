import TonearmControl
import TonearmControlPlane
import TonearmJSON
import TonearmSystem

/// The control protocol's requests answered against the control plane: what the socket serves
/// and the web remote's `POST /api` too, one vocabulary for both.
package enum ControlResponder {
    /// The sizes a scaled cover may be asked for.
    package static let artworkSizes = 16...1024

    /// Whether `command` acts on an audio session, which belongs to a connection that stays
    /// open (the socket's, not an HTTP request's).
    package static func isSessionCommand(_ command: String) -> Bool {
        command.hasPrefix("session") && command != "sessions"
    }

    /// Answers `request` on `reply`. `source` names who asks, with the control-plane client
    /// it acts for; it is asked for only when a command is sent.
    package static func answer(_ request: ControlRequest, _ reply: Reply, _ plane: any ControlPlane,
                               source: () -> CommandSource) async {
        let parsed: SocketRequest?
        do throws(ArgumentError) {
            parsed = try SocketRequest.parse(request)
        } catch {
            reply.fail(error)
            return
        }
        switch parsed {
        case nil:
            reply.failUnknownCommand()
        case .report(let report):
            let state = await plane.snapshot()
            let now = monotonicSeconds()
            let answer: JSONValue = switch report {
            case .status: Reports.status(state, now: now)
            case .queue: Reports.queue(state.queue)
            case .nowPlaying: Reports.nowPlaying(state.nowPlaying, now: now)
            case .doctor: Reports.doctor(state, now: now)
            case .sessions: Reports.sessions(state.sessions)
            }
            reply.succeed(answer)
        case .library(let library):
            await answer(library, reply, plane, source: source())
        case .command(let command, let form):
            let result = await plane.send(command, from: source())
            if let failure = result.failure {
                reply.fail(code: failure.code.rawValue, message: failure.message)
            } else {
                reply.succeed(Self.answer(result, form))
            }
        }
    }

    static func answer(_ result: CommandResult, _ form: SocketRequest.Answer) -> JSONValue {
        let status: (String, JSONValue) = ("status", .string(result.status.rawValue))
        switch (form, result.payload) {
        case (.added, .added(let count, let skipped, let queueCount)):
            return .object([
                status, ("added", .int(count)),
                ("skipped", .array(skipped.map { .object([("path", .string($0.path)), ("reason", .string($0.reason))]) })),
                ("queueCount", .int(queueCount)),
            ])
        case (_, .queueCount(let count)) where form == .queue:
            return .object([status, ("queueCount", .int(count))])
        case (_, .muted(let muted)):
            return .object([("muted", .bool(muted))])
        case (_, .artwork(let id, let mimeType, let bytes)):
            return .object([("id", .string(id)), ("mimeType", .string(mimeType)), ("bytes", .int(bytes.count)),
                            ("data", .string(Base64.encode(bytes)))])
        case (_, .session(let report)):
            return Reports.session(report)
        case (_, .sessionClosed(let id)):
            return .object([("session", .int(id.value)), ("closed", .bool(true))])
        case (_, .accepted(let frames, let backlog)):
            return .object([("accepted", .int(frames)), ("backlogFrames", .int(backlog))])
        default:
            var fields = [status]
            if let owner = result.forwardedTo { fields.append(("forwardedTo", .int(owner.value))) }
            return .object(fields)
        }
    }
}
