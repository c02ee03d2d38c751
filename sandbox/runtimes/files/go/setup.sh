# Image set-up of the go runtime (as root, no network): generate the kryt/v1 package into
# /opt/kryt/go/src (GOPATH mode; Debian's grpc-go is on /usr/share/gocode) and warm the build
# cache with grpc-go, so a bot's build compiles only its own package.
mkdir -p /opt/kryt/go/src /opt/kryt/go/cache /tmp/warm
protoc -I /opt/kryt/proto \
  --go_out=/opt/kryt/go/src --go_opt=paths=source_relative \
  --go_opt=Mkryt/v1/bot.proto=kryt/v1 \
  --go-grpc_out=/opt/kryt/go/src --go-grpc_opt=paths=source_relative \
  --go-grpc_opt=Mkryt/v1/bot.proto=kryt/v1 \
  kryt/v1/bot.proto
# grpc-go 1.33 encodes with golang/protobuf 1.3 (API v1), which cannot decode these API v2
# messages (their oneofs): the package registers an API v2 codec for every import of kryt/v1.
cp /opt/kryt/setup/codec.go /opt/kryt/go/src/kryt/v1/codec.go
cat > /tmp/warm/main.go <<'GO'
package main

import (
	_ "google.golang.org/grpc"
	_ "google.golang.org/grpc/health"
	_ "google.golang.org/grpc/health/grpc_health_v1"
	_ "kryt/v1"
)

func main() {}
GO
cd /tmp/warm && HOME=/tmp go build -trimpath -o /dev/null .
rm -rf /tmp/warm
# The build step runs as an unprivileged uid in a throw-away container: it may add to the cache.
chmod -R a+rwX /opt/kryt/go/cache
