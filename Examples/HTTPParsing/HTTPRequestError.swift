/// Why a request was refused: each case is answered with its status code, then the connection closes.
public enum HTTPRequestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The head is not HTTP/1.x: a bad request line, a header line without a name and colon, a folded
    /// line, or a `Content-Length` that is not one decimal number (`400`).
    case malformed
    /// The `Content-Length` is over ``HTTPRequestLimits/maximumBodySize`` (`413`).
    case bodyTooLarge
    /// The head is over ``HTTPRequestLimits/maximumHeadSize`` or has more than
    /// ``HTTPRequestLimits/maximumHeaderCount`` header lines (`431`).
    case headTooLarge
    /// The request has a `Transfer-Encoding`, which this server does not implement (`501`).
    case unsupportedTransferEncoding

    /// The status code of the answer.
    public var statusCode: Int {
        switch self {
        case .malformed: 400
        case .bodyTooLarge: 413
        case .headTooLarge: 431
        case .unsupportedTransferEncoding: 501
        }
    }

    /// The reason phrase of the answer's status line.
    public var reasonPhrase: String {
        switch self {
        case .malformed: "Bad Request"
        case .bodyTooLarge: "Content Too Large"
        case .headTooLarge: "Request Header Fields Too Large"
        case .unsupportedTransferEncoding: "Not Implemented"
        }
    }

    /// The status code and reason, as in `431 Request Header Fields Too Large`.
    public var description: String { "\(statusCode) \(reasonPhrase)" }
}
