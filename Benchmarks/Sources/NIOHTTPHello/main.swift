// P10's reference: a SwiftNIO HTTP/1.1 keep-alive server answering "Hello, World!" on one event-loop
// thread, the same answer as Examples/HTTPHello.
//
//     NIOHTTPHello --port 8081
import NIOCore
import NIOHTTP1
import NIOPosix

/// Answers every request with the fixed body.
final class HelloHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private static let body = "Hello, World!"

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "Content-Length", value: "13")
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: 13)
        buffer.writeString(HelloHandler.body)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

let arguments = CommandLine.arguments
let port = arguments.firstIndex(of: "--port").flatMap { Int(arguments[$0 + 1]) } ?? 8081
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.pipeline.configureHTTPServerPipeline(withErrorHandling: false).flatMap {
            channel.pipeline.addHandler(HelloHandler())
        }
    }
    .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .bind(host: "127.0.0.1", port: port)
    .wait()
print("NIOHTTPHello listening on 127.0.0.1:\(channel.localAddress?.port ?? port)")
try channel.closeFuture.wait()
