package org.kryt.runtime;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;

/**
 * Starts a Java bot in the sandbox: {@code Launch MAIN_CLASS [ARGS...]}.
 *
 * <p>The referee dials a Unix socket ({@code $KRYT_BOT_ADDRESS = unix:///run/kryt/bot.sock}),
 * but Debian's netty has no native transport, so grpc-java cannot serve on one. The launcher
 * picks a free loopback port, calls {@code MAIN_CLASS.main("127.0.0.1:PORT", ARGS...)}, and
 * once that port accepts connections binds the Unix socket and copies bytes both ways. With
 * any other address (a local run) the bot gets the address unchanged.
 */
public final class Launch {
  private static final int BUFFER = 64 * 1024;

  private Launch() {}

  public static void main(String[] args) throws Throwable {
    if (args.length == 1 && args[0].equals("--check")) {
      for (String name : new String[] {"io.grpc.netty.NettyServerBuilder", "kryt.v1.BotGrpc",
          "io.grpc.health.v1.HealthGrpc", "com.google.protobuf.Message"}) {
        Class.forName(name);
      }
      System.out.println("java runtime: classes found");
      return;
    }
    if (args.length < 1) {
      System.err.println("usage: Launch MAIN_CLASS [ARGS...]");
      System.exit(2);
    }
    String address = System.getenv("KRYT_BOT_ADDRESS");
    String serveOn = address == null ? "127.0.0.1:50051" : address;
    if (address != null && address.startsWith("unix:")) {
      Path socket = Path.of(address.replaceFirst("^unix:(//)?", ""));
      int port = freePort();
      serveOn = "127.0.0.1:" + port;
      Thread bridge = new Thread(() -> bridge(socket, port), "kryt-bridge");
      bridge.setDaemon(true);
      bridge.start();
    }
    String[] botArgs = new String[args.length];
    botArgs[0] = serveOn;
    System.arraycopy(args, 1, botArgs, 1, args.length - 1);
    Method main = Class.forName(args[0]).getMethod("main", String[].class);
    try {
      main.invoke(null, (Object) botArgs);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return probe.getLocalPort();
    }
  }

  private static void bridge(Path socket, int port) {
    InetSocketAddress target = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    try {
      // Bind the socket only once the bot listens: the referee treats the socket as "started".
      while (true) {
        try (SocketChannel probe = SocketChannel.open(target)) {
          break;
        } catch (IOException notYet) {
          Thread.sleep(10);
        }
      }
      ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      server.bind(UnixDomainSocketAddress.of(socket));
      while (true) {
        SocketChannel client = server.accept();
        SocketChannel upstream;
        try {
          upstream = SocketChannel.open(target);
        } catch (IOException e) {
          client.close();
          continue;
        }
        try {
          // Small messages both ways: without it each reply waits for the delayed ACK (~40 ms).
          upstream.setOption(StandardSocketOptions.TCP_NODELAY, true);
        } catch (IOException e) {
          System.err.println("kryt bridge: no TCP_NODELAY: " + e);
        }
        pump(client, upstream);
        pump(upstream, client);
      }
    } catch (IOException | InterruptedException e) {
      System.err.println("kryt bridge failed: " + e);
      Runtime.getRuntime().halt(70);
    }
  }

  private static void pump(SocketChannel from, SocketChannel to) {
    Thread thread = new Thread(() -> {
      ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER);
      try {
        while (from.read(buffer) >= 0) {
          buffer.flip();
          while (buffer.hasRemaining()) {
            to.write(buffer);
          }
          buffer.clear();
        }
        to.shutdownOutput();
      } catch (IOException e) {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "kryt-bridge-pump");
    thread.setDaemon(true);
    thread.start();
  }

  private static void closeQuietly(SocketChannel channel) {
    try {
      channel.close();
    } catch (IOException ignored) {
      // already closed by the other pump
    }
  }

}
