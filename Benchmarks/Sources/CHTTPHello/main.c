// P10-limit's reference: the keep-alive "Hello, World!" server of Examples/HTTPHello written in C on
// libuv, one loop, for the limit of what a server on one libuv loop does on this machine.
//
//     CHTTPHello --port 8082
//
// It answers the same bytes as HTTPHello. It parses less: it counts the ends of request heads
// ("\r\n\r\n", also across reads) and answers each, so it assumes requests without a body, which
// is what `wrk` sends. Like HTTPHello, the answers to the requests of one read go out in one write,
// tried at once (`uv_try_write`) and queued only for what the socket did not take.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

static const char response[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
#define RESPONSE_LENGTH (sizeof(response) - 1)
#define BATCH 64
static char batch[BATCH * RESPONSE_LENGTH];  // BATCH answers back to back

typedef struct {
    uv_tcp_t handle;
    int matched;  // how many bytes of "\r\n\r\n" the data read so far ends with
    char buffer[16384];
} connection_t;

typedef struct {
    uv_write_t request;
    connection_t *connection;
} write_t;

static void on_close(uv_handle_t *handle) { free(handle); }

static void on_write(uv_write_t *request, int status) {
    write_t *write = (write_t *)request;
    if (status < 0 && !uv_is_closing((uv_handle_t *)&write->connection->handle)) {
        uv_close((uv_handle_t *)&write->connection->handle, on_close);
    }
    free(write);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    connection_t *connection = (connection_t *)handle;
    *buf = uv_buf_init(connection->buffer, sizeof(connection->buffer));
}

static void send_answers(connection_t *connection, size_t count) {
    while (count > 0) {
        size_t now = count < BATCH ? count : BATCH;
        count -= now;
        uv_buf_t buf = uv_buf_init(batch, (unsigned)(now * RESPONSE_LENGTH));
        int written = uv_try_write((uv_stream_t *)&connection->handle, &buf, 1);
        if (written == (int)buf.len) continue;
        if (written < 0 && written != UV_EAGAIN) {
            uv_close((uv_handle_t *)&connection->handle, on_close);
            return;
        }
        if (written > 0) {
            buf.base += written;
            buf.len -= (size_t)written;
        }
        write_t *write = malloc(sizeof(write_t));
        write->connection = connection;
        uv_write(&write->request, (uv_stream_t *)&connection->handle, &buf, 1, on_write);
    }
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    connection_t *connection = (connection_t *)stream;
    if (nread < 0) {
        if (!uv_is_closing((uv_handle_t *)stream)) uv_close((uv_handle_t *)stream, on_close);
        return;
    }
    static const char end[] = "\r\n\r\n";
    size_t requests = 0;
    int matched = connection->matched;
    for (ssize_t i = 0; i < nread; i++) {
        char byte = buf->base[i];
        if (byte == end[matched]) {
            if (++matched == 4) {
                requests++;
                matched = 0;
            }
        } else {
            matched = byte == '\r' ? 1 : 0;
        }
    }
    connection->matched = matched;
    if (requests > 0) send_answers(connection, requests);
}

static void on_connection(uv_stream_t *server, int status) {
    if (status < 0) return;
    connection_t *connection = malloc(sizeof(connection_t));
    connection->matched = 0;
    uv_tcp_init(server->loop, &connection->handle);
    if (uv_accept(server, (uv_stream_t *)&connection->handle) != 0) {
        uv_close((uv_handle_t *)&connection->handle, on_close);
        return;
    }
    uv_tcp_nodelay(&connection->handle, 1);
    uv_read_start((uv_stream_t *)&connection->handle, on_alloc, on_read);
}

int main(int argc, char **argv) {
    int port = 8082;
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
    }
    for (int i = 0; i < BATCH; i++) memcpy(batch + i * RESPONSE_LENGTH, response, RESPONSE_LENGTH);
    uv_loop_t *loop = uv_default_loop();
    uv_tcp_t server;
    uv_tcp_init(loop, &server);
    struct sockaddr_in address;
    uv_ip4_addr("127.0.0.1", port, &address);
    int error = uv_tcp_bind(&server, (const struct sockaddr *)&address, 0);
    if (error == 0) error = uv_listen((uv_stream_t *)&server, 256, on_connection);
    if (error != 0) {
        fprintf(stderr, "CHTTPHello: %s\n", uv_strerror(error));
        return 1;
    }
    printf("CHTTPHello listening on 127.0.0.1:%d\n", port);
    fflush(stdout);
    return uv_run(loop, UV_RUN_DEFAULT);
}
