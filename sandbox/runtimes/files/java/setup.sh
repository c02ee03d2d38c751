# Image set-up of the java runtime (as root, no network): generate the kryt.v1 and
# grpc.health.v1 classes (Debian ships no grpc-services) and compile them with the launcher
# into /opt/kryt/java/lib/kryt-runtime.jar, which is on the image's CLASSPATH.
mkdir -p /opt/kryt/java && cd /opt/kryt/java
mkdir -p gen classes lib
protoc -I /opt/kryt/proto --java_out=gen --grpc-java_out=gen \
  --plugin=protoc-gen-grpc-java=/usr/bin/grpc_java_plugin \
  kryt/v1/bot.proto grpc/health/v1/health.proto
# grpc-java 1.41 marks its classes @javax.annotation.Generated, which Java 17 does not have.
find gen -name "*Grpc.java" -exec sed -i '/^@javax.annotation.Generated(/,/)$/d' {} +
javac -nowarn -encoding UTF-8 -d classes $(find gen /opt/kryt/setup -name "*.java" | sort)
jar cf lib/kryt-runtime.jar -C classes .
rm -rf gen classes
# Start-up check: the JVM finds every class a bot needs on the image's CLASSPATH.
java -XX:-UsePerfData -cp "$CLASSPATH" org.kryt.runtime.Launch --check
