/**
 * The secret-checked runner transport on real loopback sockets (so in the integration ring): an RPC answered end to end through the client
 * protocol the runners use, the handler seeing exactly the bytes after the proof, and connections with a wrong
 * proof, garbage, a short line, nothing at all or a proof too slow for the deadline closed before any byte reaches
 * the handler. The deadline runs on the TestClock; the sockets are the only real thing here.
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as Runners from "@effect/cluster/Runners"
import * as SocketServer from "@effect/platform/SocketServer"
import { Rpc, RpcClient, RpcGroup, RpcSerialization, RpcServer } from "@effect/rpc"
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Option, Ref, Schema, Scope, TestClock, TestServices } from "effect"
import * as net from "node:net"
import * as Transport from "../packages/cluster/src/Transport.js"

const SECRET = "cluster-secret-for-tests"
const LISTEN = { host: "127.0.0.1", port: 0 } // the kernel picks a free port; the test reads it back

const Shout = Rpc.make("Shout", { payload: { text: Schema.String }, success: Schema.String })
const Api = RpcGroup.make(Shout)

const portOf = (server: SocketServer.SocketServer["Type"]) =>
  server.address._tag === "TcpAddress" ? server.address.port : assert.fail("expected a TCP address")

/** Waits on the real clock (at most 5 s) until `check` holds. */
const eventually = (check: Effect.Effect<boolean>, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500; i++) {
      if (yield* check) return
      yield* TestServices.provideLive(Effect.sleep("10 millis"))
    }
    assert.fail(`timed out waiting until ${what}`)
  })

/** The Api served by RpcServer over the transport's server; counts the calls its handler answered. */
const serveApi = Effect.gen(function*() {
  const calls = yield* Ref.make(0)
  const handlers = Api.toLayer({
    Shout: ({ text }) => Ref.update(calls, (n) => n + 1).pipe(Effect.as(text.toUpperCase()))
  })
  const context = yield* Layer.build(
    RpcServer.layer(Api).pipe(
      Layer.provide(handlers),
      Layer.provide(RpcServer.layerProtocolSocketServer),
      Layer.provideMerge(Transport.layerServer({ listen: LISTEN, secret: SECRET })),
      Layer.provide(RpcSerialization.layerMsgPack)
    )
  )
  return { port: portOf(Context.get(context, SocketServer.SocketServer)), calls }
})

/** An Api client the way Runners makes one: RpcClientProtocol for the address, then RpcClient.make. */
const clientFor = (port: number, secret: string) =>
  Effect.gen(function*() {
    const makeProtocol = yield* Runners.RpcClientProtocol
    const protocol = yield* makeProtocol(RunnerAddress.make("127.0.0.1", port))
    return yield* RpcClient.make(Api).pipe(Effect.provideService(RpcClient.Protocol, protocol))
  }).pipe(Effect.provide(Transport.layerClientProtocol(secret).pipe(Layer.provide(RpcSerialization.layerMsgPack))))

/** The transport's server with a raw handler that records every connection it is given and every byte it reads. */
const serveRaw = Effect.gen(function*() {
  const server = Context.get(
    yield* Layer.build(Transport.layerServer({ listen: LISTEN, secret: SECRET })),
    SocketServer.SocketServer
  )
  const connections = yield* Ref.make(0)
  const received = yield* Ref.make("")
  const decoder = new TextDecoder()
  yield* server.run((socket) =>
    Ref.update(connections, (n) => n + 1).pipe(
      Effect.zipRight(socket.run((chunk) => Ref.update(received, (text) => text + decoder.decode(chunk))))
    )
  ).pipe(Effect.forkScoped)
  return { port: portOf(server), connections, received }
})

/** A plain TCP client; destroyed with the test's scope. */
const dial = (port: number) =>
  Effect.acquireRelease(
    Effect.async<net.Socket, Error>((resume) => {
      const socket = net.createConnection({ host: "127.0.0.1", port }, () => resume(Effect.succeed(socket)))
      socket.on("error", (error) => resume(Effect.fail(error))) // later errors (a reset) just close it
    }),
    (socket) => Effect.sync(() => socket.destroy())
  )

/** An RPC call that fails with a TimeoutException if the answer has not come within 5 s (real time). */
const answered = <A, E>(call: Effect.Effect<A, E>) => TestServices.provideLive(Effect.timeout(call, "5 seconds"))

const send = (socket: net.Socket, bytes: string | Uint8Array) => Effect.sync(() => socket.write(bytes))

/** A plain TCP client that sends `bytes` first. */
const dialWith = (port: number, bytes: string | Uint8Array) => Effect.tap(dial(port), (socket) => send(socket, bytes))

const closedByServer = (socket: net.Socket) => eventually(Effect.sync(() => socket.closed), "the server closed it")

describe("Transport", () => {
  it.scoped("a client holding the secret gets its RPC answered", () =>
    Effect.gen(function*() {
      const { calls, port } = yield* serveApi
      const client = yield* clientFor(port, SECRET)
      assert.strictEqual(yield* answered(client.Shout({ text: "hello" })), "HELLO")
      assert.strictEqual(yield* answered(client.Shout({ text: "again" })), "AGAIN")
      assert.strictEqual(yield* Ref.get(calls), 2)
    }))

  it.scoped("a client with another secret is cut off: its call fails and never reaches the handler", () =>
    Effect.gen(function*() {
      const { calls, port } = yield* serveApi
      const client = yield* clientFor(port, "not-the-secret")
      const error = yield* Effect.flip(answered(client.Shout({ text: "hello" })))
      assert.strictEqual(error._tag, "RpcClientError")
      assert.strictEqual(yield* Ref.get(calls), 0)
    }))

  it.scoped("the handler gets exactly the bytes after the proof, from the same write and later ones", () =>
    Effect.gen(function*() {
      const { connections, port, received } = yield* serveRaw
      const socket = yield* dialWith(port, Buffer.concat([Transport.proof(SECRET), Buffer.from("hello")]))
      yield* eventually(Effect.map(Ref.get(received), (text) => text === "hello"), "the handler read hello")
      yield* send(socket, " world")
      yield* eventually(Effect.map(Ref.get(received), (text) => text.length >= 11), "the handler read the rest")
      assert.strictEqual(yield* Ref.get(received), "hello world")
      assert.strictEqual(yield* Ref.get(connections), 1)
    }))

  it.scoped("a wrong proof, garbage or a short line is closed before the handler sees a byte", () =>
    Effect.gen(function*() {
      const { connections, port, received } = yield* serveRaw
      const wrong = yield* dialWith(port, Buffer.concat([Transport.proof("not-the-secret"), Buffer.from("wrong")]))
      const garbage = yield* dialWith(
        port,
        `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/8.0\r\n${"x".repeat(80)}\r\n\r\n`
      )
      const short = yield* dial(port)
      yield* Effect.sync(() => short.end("FLOTTA-CLUSTER/1 ")) // then half-closes: the line can never complete
      for (const socket of [wrong, garbage, short]) yield* closedByServer(socket)
      // Control: the same server hands a proven connection to the handler, and only its bytes are there.
      yield* dialWith(port, Buffer.concat([Transport.proof(SECRET), Buffer.from("ok")]))
      yield* eventually(Effect.map(Ref.get(received), (text) => text.length >= 2), "the handler read ok")
      assert.strictEqual(yield* Ref.get(received), "ok")
      assert.strictEqual(yield* Ref.get(connections), 1)
    }))

  it.scoped("silence or a proof still incomplete at the deadline is closed then, and not before", () =>
    Effect.gen(function*() {
      const { connections, port, received } = yield* serveRaw
      const silent = yield* dial(port)
      const slow = yield* dialWith(port, Transport.proof(SECRET).subarray(0, 40))
      // Both connections are waiting for their proof once the server's two deadlines are on the TestClock.
      yield* eventually(Effect.map(TestClock.sleeps(), (sleeps) => sleeps.length === 2), "both deadlines started")
      yield* TestClock.adjust(Duration.subtract(Transport.PROOF_DEADLINE, "1 millis"))
      yield* TestServices.provideLive(Effect.sleep("100 millis"))
      assert.isFalse(silent.closed || slow.closed, "closed before the deadline")
      yield* TestClock.adjust("1 millis")
      yield* closedByServer(silent)
      yield* closedByServer(slow)
      assert.strictEqual(yield* Ref.get(connections), 0)
      assert.strictEqual(yield* Ref.get(received), "")
    }))

  it.scoped("closing the server closes a connection still owing its proof (a net server waits for every socket)", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { port } = yield* Scope.extend(serveRaw, scope)
      const silent = yield* dial(port)
      yield* eventually(Effect.map(TestClock.sleeps(), (sleeps) => sleeps.length === 1), "the deadline started")
      const closing = yield* Scope.close(scope, Exit.void).pipe(
        Effect.disconnect, // finalizers are uninterruptible: let the timeout give up on a close that hangs
        Effect.timeout("5 seconds"),
        Effect.option,
        TestServices.provideLive
      )
      assert.isTrue(Option.isSome(closing), "the server's close hung on the connection")
      yield* closedByServer(silent)
    }))
})
