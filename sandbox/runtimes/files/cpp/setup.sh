# Image set-up of the cpp runtime (as root, no network): generate the protocol's C++ bindings
# and compile them once into /opt/kryt/cpp/lib/libkryt_proto.a, so a bot's build compiles
# only its own code (the generated gRPC code alone takes about a minute to compile).
cd /opt/kryt
mkdir -p cpp/include cpp/lib cpp/obj
protoc -I proto --cpp_out=cpp/include --grpc_out=cpp/include \
  --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin kryt/v1/bot.proto
for source in cpp/include/kryt/v1/*.cc; do
  g++ -std=c++17 -O2 -pipe -Icpp/include -c "$source" -o "cpp/obj/$(basename "$source" .cc).o"
done
ar rcs cpp/lib/libkryt_proto.a cpp/obj/*.o
rm -rf cpp/obj cpp/include/kryt/v1/*.cc
