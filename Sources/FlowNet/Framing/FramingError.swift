/// Why a framed read of a ``StreamConnection`` (``StreamConnection/lines(maximumLength:)``,
/// ``StreamConnection/frames(lengthPrefix:maximumLength:)``) failed: the peer sent what the framing
/// does not allow. The sequence or signal ends with it; the connection stays open, so that a server
/// can answer before it closes it.
///
/// ```swift
/// do {
///     for try await line in connection.lines(maximumLength: 1024) { handle(line) }
/// } catch FramingError.lineTooLong {
///     connection.write("ERR line too long\r\n").always { connection.close() }
/// }
/// ```
public enum FramingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A line grew past `maximumLength` bytes (its `\n` or `\r\n` not counted) before it ended.
    case lineTooLong(maximumLength: Int)
    /// A frame's length prefix announced `length` bytes, more than `maximumLength`.
    case frameTooLong(length: Int, maximumLength: Int)
    /// The peer closed its side in the middle of a frame, after `receivedBytes` of it (its length
    /// prefix included): the frame is incomplete, not shorter.
    case endOfStreamInsideFrame(receivedBytes: Int)

    /// A sentence saying what the peer did.
    public var description: String {
        switch self {
        case .lineTooLong(let maximumLength):
            return "the peer sent a line longer than the maximum of \(maximumLength) bytes"
        case .frameTooLong(let length, let maximumLength):
            return "the peer announced a frame of \(length) bytes, more than the maximum of \(maximumLength)"
        case .endOfStreamInsideFrame(let receivedBytes):
            return "the peer closed the connection inside a frame, after \(receivedBytes) bytes of it"
        }
    }
}
