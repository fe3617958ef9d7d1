#!/usr/bin/env python3
"""A TCP port in front of a PostgreSQL unix socket that holds every chunk it
forwards for a while each way, as a network between the host and a server of
its own would: what a recall's round trips cost when each one is not almost
free as on a local socket.

    python3 bench/memory/slow_link.py PORT SOCKET MICROSECONDS

e.g. slow_link.py 6543 /tmp/w/pg/.s.PGSQL.5432 250, then
postgresql://gatehouse:...@127.0.0.1:6543/notes?sslmode=disable. The hold is
a sleep, so at least MICROSECONDS (the kernel's timer slack adds some 50).
"""
import socket
import sys
import threading
import time


def pump(source, sink, hold):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            time.sleep(hold)
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: slow_link.py PORT SOCKET MICROSECONDS")
    port, target, hold = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]) / 1e6
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server = socket.socket(socket.AF_UNIX)
        server.connect(target)
        threading.Thread(target=pump, args=(client, server, hold), daemon=True).start()
        threading.Thread(target=pump, args=(server, client, hold), daemon=True).start()


if __name__ == "__main__":
    main()
