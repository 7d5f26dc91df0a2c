# The nginx the benchmark scripts measure against, sourced by them (not run on its own):
#   bench_nginx_start WORK BULK_MIB     makes WORK/www (a 22-byte JSON, 1 MiB, BULK_MIB MiB),
#                                       a config of its own and starts nginx on free loopback
#                                       ports; sets the bases below
#   bench_nginx_stop WORK               stops it (for a trap: never fails)
#   bench_nginx_connections BASE        prints how many connections the server has accepted so
#                                       far, from BASE's /connection-serial (opens one itself)
# Bases: bench_nginx_base (http://127.0.0.1:PORT), and over TLS 1.3 with a test CA made here
# (bench_nginx_cacert, an ECDSA P-256 leaf for 127.0.0.1): bench_nginx_tls_base (HTTP/1.1,
# kept alive), bench_nginx_h2_base (HTTP/2 by ALPN, 128 streams per connection) and
# bench_nginx_close_base (HTTP/1.1, every connection closed after its answer, with TLS session
# resumption offered: a session cache and tickets; WORK/logs/close.log gets one line per request,
# "r" when its connection resumed a session and "." when it shook hands in full).
# One worker, no access log elsewhere, keep-alive for a million requests: the server must not be
# what limits a client, nor close its connections between requests (but where asked to).

bench_nginx_start() {
  local work=$1 bulk_mib=$2
  command -v nginx >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light; }
  bench_nginx=$(command -v nginx || echo /usr/sbin/nginx)
  local port tls_port h2_port close_port
  read -r port tls_port h2_port close_port < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(4)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))')
  mkdir -p "$work/www" "$work/logs" "$work/tmp" "$work/tls"
  bench_nginx_make_ca "$work/tls"
  printf '{"ok":true,"n":12345}\n' > "$work/www/small.json"
  head -c $((1 << 20)) /dev/urandom > "$work/www/1m.bin"
  head -c $((bulk_mib << 20)) /dev/urandom > "$work/www/100m.bin"
  cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    default_type application/octet-stream;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    # /connection-serial answers nginx's count of accepted connections (\$connection), on every
    # server: the difference over a row is how many connections its client opened.
    server {
        listen 127.0.0.1:$port;
        root $work/www;
        location = /connection-serial { return 200 "\$connection\\n"; }
    }
    ssl_certificate $work/tls/leaf.pem;
    ssl_certificate_key $work/tls/leaf.key;
    ssl_protocols TLSv1.3;
    ssl_session_cache shared:bench:10m;
    ssl_session_tickets on;
    http2_max_concurrent_streams 128;
    log_format resumed "\$ssl_session_reused";
    server {
        listen 127.0.0.1:$tls_port ssl;
        root $work/www;
        location = /connection-serial { return 200 "\$connection\\n"; }
    }
    server {
        listen 127.0.0.1:$h2_port ssl http2;
        root $work/www;
        location = /connection-serial { return 200 "\$connection\\n"; }
    }
    server {
        listen 127.0.0.1:$close_port ssl;
        root $work/www;
        keepalive_timeout 0;
        access_log $work/logs/close.log resumed;
        location = /connection-serial { access_log off; return 200 "\$connection\\n"; }
    }
}
CONF
  chmod -R a+rX "$work"   # nginx workers run unprivileged; mktemp -d makes the folder 0700
  "$bench_nginx" -c "$work/nginx.conf" -p "$work"
  bench_nginx_base="http://127.0.0.1:$port"
  bench_nginx_tls_base="https://127.0.0.1:$tls_port"
  bench_nginx_h2_base="https://127.0.0.1:$h2_port"
  bench_nginx_close_base="https://127.0.0.1:$close_port"
  bench_nginx_cacert="$work/tls/ca.pem"
}

# A test CA and a leaf it signed for 127.0.0.1 and localhost, both ECDSA P-256 (what a TLS 1.3
# server of today presents), valid for two days: DIR/ca.pem, DIR/leaf.pem, DIR/leaf.key.
bench_nginx_make_ca() {
  local dir=$1
  command -v openssl >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl; }
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" \
      -days 2 -subj "/CN=HTTPOperations benchmark CA" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/leaf.key" -out "$dir/leaf.csr" \
      -subj "/CN=127.0.0.1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$dir/leaf.ext"
  openssl x509 -req -in "$dir/leaf.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -out "$dir/leaf.pem" \
      -days 2 -extfile "$dir/leaf.ext" 2>/dev/null
}

bench_nginx_connections() {
  curl -sf --cacert "$bench_nginx_cacert" "$1/connection-serial"
}

bench_nginx_stop() {
  "${bench_nginx:-nginx}" -c "$1/nginx.conf" -p "$1" -s stop 2>/dev/null || true
}
