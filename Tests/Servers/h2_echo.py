"""An HTTP/2 server over TLS that answers every request with what it received, request
trailers included, as JSON: {"method", "path", "headers", "body", "trailers"}.

The HTTP/2 side is hyper-h2 (PyPI: h2), an implementation nobody here wrote: the tests use it
where nginx cannot help, to see what a client sends after an HTTP/2 request body (nginx reads
request trailers but passes them to no upstream). Started by the tests
(ExternalServers.h2Echo), one thread per connection, on loopback only.

    python3 h2_echo.py PORT CERT_PEM KEY_PEM
"""
import json
import socket
import ssl
import sys
import threading

import h2.config
import h2.connection
import h2.events
import h2.exceptions


def serve_connection(tls):
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
    connection.initiate_connection()
    tls.sendall(connection.data_to_send())
    streams = {}
    while True:
        data = tls.recv(65536)
        if not data:
            return
        for event in connection.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                streams[event.stream_id] = {"headers": event.headers, "body": bytearray(), "trailers": []}
            elif isinstance(event, h2.events.DataReceived):
                streams[event.stream_id]["body"] += event.data
                # Give the window back at once: the body is kept, never held up.
                connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.TrailersReceived):
                streams[event.stream_id]["trailers"] = event.headers
            elif isinstance(event, h2.events.StreamEnded):
                answer(connection, event.stream_id, streams.pop(event.stream_id))
            elif isinstance(event, h2.events.ConnectionTerminated):
                tls.sendall(connection.data_to_send())
                return
        tls.sendall(connection.data_to_send())


def text(value):
    return value.decode("latin-1") if isinstance(value, bytes) else value


def answer(connection, stream_id, stream):
    pseudo = {text(name): text(value) for name, value in stream["headers"] if text(name).startswith(":")}
    body = json.dumps({
        "method": pseudo.get(":method"),
        "path": pseudo.get(":path"),
        "headers": {text(name): text(value) for name, value in stream["headers"] if not text(name).startswith(":")},
        "body": stream["body"].decode("utf-8", "replace"),
        "trailers": {text(name): text(value) for name, value in stream["trailers"]},
    }).encode()
    connection.send_headers(stream_id, [(":status", "200"), ("content-type", "application/json"),
                                        ("content-length", str(len(body)))])
    connection.send_data(stream_id, body, end_stream=True)


def main():
    port, certificate, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    context.set_alpn_protocols(["h2"])
    listener = socket.create_server(("127.0.0.1", port), reuse_port=False)
    while True:
        client, _ = listener.accept()

        def run(client=client):
            try:
                with context.wrap_socket(client, server_side=True) as tls:
                    serve_connection(tls)
            except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
                pass

        threading.Thread(target=run, daemon=True).start()


if __name__ == "__main__":
    main()
