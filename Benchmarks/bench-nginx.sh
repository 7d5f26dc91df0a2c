# The nginx the benchmark scripts measure against, sourced by them (not run on its own):
#   bench_nginx_start WORK BULK_MIB     makes WORK/www (a 22-byte JSON, 1 MiB, BULK_MIB MiB),
#                                       a config of its own and starts nginx on a free loopback
#                                       port; sets bench_nginx_base to its http://127.0.0.1:PORT
#   bench_nginx_stop WORK               stops it (for a trap: never fails)
# One worker, no access log, keep-alive for a million requests: the server must not be what
# limits a client, nor close its connections between requests.

bench_nginx_start() {
  local work=$1 bulk_mib=$2
  command -v nginx >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light; }
  bench_nginx=$(command -v nginx || echo /usr/sbin/nginx)
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$work/www" "$work/logs" "$work/tmp"
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
    server {
        listen 127.0.0.1:$port;
        root $work/www;
    }
}
CONF
  chmod -R a+rX "$work"   # nginx workers run unprivileged; mktemp -d makes the folder 0700
  "$bench_nginx" -c "$work/nginx.conf" -p "$work"
  bench_nginx_base="http://127.0.0.1:$port"
}

bench_nginx_stop() {
  "${bench_nginx:-nginx}" -c "$1/nginx.conf" -p "$1" -s stop 2>/dev/null || true
}
