// A complete Kryt Arena bot in JavaScript (Node.js 18, @grpc/grpc-js, @grpc/proto-loader).
// It serves the kryt.v1.Bot service and the standard health service on $KRYT_BOT_ADDRESS and
// plays its first legal action, taking only when nothing else is legal.
"use strict";
const fs = require("fs");
const path = require("path");
// The image keeps these two packages on NODE_PATH, which `import` ignores: an ES module
// (bot.mjs, or "type": "module") loads them with a require of its own, made by
// `import { createRequire } from "module"; const require = createRequire(import.meta.url);`
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

// The protos: $KRYT_PROTO_DIR if set, else the bot's own proto/ folder (`kryt bot new` copies
// it in, so the bot runs anywhere), else the runtime image's /opt/kryt/proto, else the
// checkout's proto/ (this starter in place).
const PROTO_DIRS = [
  process.env.KRYT_PROTO_DIR,
  path.join(__dirname, "proto"),
  "/opt/kryt/proto",
  path.join(__dirname, "../../../proto"),
].filter(Boolean);
const protoDir = PROTO_DIRS.find((dir) => fs.existsSync(path.join(dir, "kryt/v1/bot.proto")));
if (protoDir === undefined) {
  console.error(`no kryt/v1/bot.proto in any of ${PROTO_DIRS.join(", ")}: copy the arena's proto/ folder into the bot's folder, or set KRYT_PROTO_DIR`);
  process.exit(2);
}
// longs: String keeps the 64-bit request_id exact (a JavaScript number would round it).
const definition = protoLoader.loadSync(["kryt/v1/bot.proto", "grpc/health/v1/health.proto"], {
  includeDirs: [protoDir],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const proto = grpc.loadPackageDefinition(definition);

const NAME = "example-js";
const VERSION = "1.0.0";

function choose(view) {
  const legal = view.legal_actions;
  // "take" and "swap take" both take: any other legal action first.
  return legal.find((action) => action !== "take" && action !== "swap take") || legal[0];
}

function play(call) {
  call.on("data", (message) => {
    switch (message.body) {
      case "handshake":
        call.write({ handshake_reply: { protocol_version: 1, name: NAME, version: VERSION, sdk: "node" } });
        break;
      case "decision_request": {
        const request = message.decision_request;
        call.write({ decision: { request_id: request.request_id, text: choose(request.view) } });
        break;
      }
      case "shutdown":
        call.end();
        setTimeout(() => process.exit(0), 100);
        break;
      default: // game_start and game_end need no reply
    }
  });
  call.on("end", () => call.end());
  call.on("error", () => {});
}

function check(_call, callback) {
  callback(null, { status: "SERVING" });
}

const server = new grpc.Server({ "grpc.max_receive_message_length": 4 << 20 });
server.addService(proto.kryt.v1.Bot.service, { Play: play });
server.addService(proto.grpc.health.v1.Health.service, {
  Check: check,
  Watch: (call) => call.emit("error", { code: grpc.status.UNIMPLEMENTED }),
});
const address = process.argv[2] || process.env.KRYT_BOT_ADDRESS || "127.0.0.1:50051";
server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error) => {
  if (error) {
    console.error(`cannot serve on ${address}: ${error.message}`);
    process.exit(1);
  }
  console.error(`${NAME} ${VERSION} serving on ${address}`);
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));
