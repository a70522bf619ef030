/**
 * Runner-to-runner traffic that requires the cluster's shared secret. Every connection opens with a fixed-length
 * proof line (`FLOTTA-CLUSTER/1 <hex HMAC-SHA256(secret, "flotta-cluster/1")>\n`); the server reads exactly that
 * many bytes within a deadline and hands the connection to RPC only when they match, so nothing a stranger sends
 * is ever decoded. The proof is a static bearer token (no TLS, no challenge): it keeps other programs and
 * misconfigured nodes out, not an eavesdropper on the wire.
 */
import type { RunnerAddress } from "@effect/cluster/RunnerAddress"
import * as Runners from "@effect/cluster/Runners"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import * as Socket from "@effect/platform/Socket"
import * as SocketServer from "@effect/platform/SocketServer"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import { Effect, Layer } from "effect"
import * as Crypto from "node:crypto"
import * as Net from "node:net"

/** What the node listens on (its own server) and the secret every connection must present. */
export interface TransportOptions {
  readonly listen: { readonly host: string; readonly port: number }
  readonly secret: string
}

/** How long a new connection has to present its proof before it is closed. */
export const PROOF_DEADLINE = "5 seconds"

/** The line a connection opens with: always 82 bytes, whatever the secret. */
export const proof = (secret: string): Buffer =>
  Buffer.from(`FLOTTA-CLUSTER/1 ${Crypto.createHmac("sha256", secret).update("flotta-cluster/1").digest("hex")}\n`)

/**
 * Exactly `length` bytes from a connection nobody reads yet (`undefined` if it ends or closes first). `read(length)`
 * leaves whatever follows in the stream's buffer, and once the `readable` listener is gone the handler's `data`
 * listener switches the stream to flowing mode and gets those bytes first.
 */
const readExactly = (conn: Net.Socket, length: number) =>
  Effect.async<Buffer | undefined>((resume) => {
    const done = (bytes: Buffer | undefined) => {
      stop()
      resume(Effect.succeed(bytes))
    }
    const onReadable = () => {
      const bytes: Buffer | null = conn.read(length) // at the end of the stream, what is left (shorter)
      if (bytes !== null) done(bytes)
    }
    const onGone = () => done(undefined)
    const stop = () => {
      conn.off("readable", onReadable)
      conn.off("end", onGone)
      conn.off("close", onGone)
    }
    if (conn.destroyed || conn.readableEnded) return resume(Effect.succeed(undefined))
    conn.on("readable", onReadable)
    conn.on("end", onGone)
    conn.on("close", onGone)
    return Effect.sync(stop)
  })

/** Runs `handler` on a connection only once it has presented `expected`; otherwise destroys it. */
const admit =
  (expected: Buffer) =>
  <A, E, R>(handler: (socket: Socket.Socket) => Effect.Effect<A, E, R>) =>
  (socket: Socket.Socket) =>
    Effect.gen(function*() {
      // NodeSocketServer provides the raw connection to its handler; the effect socket has not started reading yet.
      const conn = yield* Effect.serviceOptional(NodeSocket.NetSocket).pipe(Effect.orDie)
      const presented = yield* readExactly(conn, expected.length).pipe(
        Effect.timeoutTo({ duration: PROOF_DEADLINE, onSuccess: (bytes) => bytes, onTimeout: () => undefined }),
        Effect.onInterrupt(() => Effect.sync(() => conn.destroy())) // server closing: its close waits for every socket
      )
      // timingSafeEqual needs equal lengths; the length is public anyway.
      if (presented?.length === expected.length && Crypto.timingSafeEqual(presented, expected)) {
        return yield* handler(socket)
      }
      yield* Effect.sync(() => conn.destroy())
      return yield* Effect.logWarning("cluster: closed a connection that did not present the secret's proof").pipe(
        Effect.annotateLogs({
          remote: `${conn.remoteAddress}:${conn.remotePort}`,
          reason: presented === undefined ? "no proof before the deadline" : "wrong proof"
        })
      )
    })

/**
 * The socket server runners listen on (NodeSocketServer, listening on `options.listen`): a connection that does not
 * open with the secret's proof is closed, and nothing it sent reaches the handler (RPC).
 */
export const layerServer = (options: TransportOptions): Layer.Layer<
  SocketServer.SocketServer,
  SocketServer.SocketServerError
> =>
  Layer.scoped(
    SocketServer.SocketServer,
    Effect.map(NodeSocketServer.make({ host: options.listen.host, port: options.listen.port }), (server) => {
      const guard = admit(proof(options.secret))
      return SocketServer.SocketServer.of({ address: server.address, run: (handler) => server.run(guard(handler)) })
    })
  )

/** A TCP connection to `address` that writes `preamble` before anything else (NodeSocket.makeNet, plus the write). */
const connect = (address: RunnerAddress, preamble: Buffer) =>
  NodeSocket.fromDuplex(
    Effect.gen(function*() {
      let conn: Net.Socket | undefined
      // Registered before connecting, so a connection abandoned by the open timeout is still destroyed.
      yield* Effect.addFinalizer(() => Effect.sync(() => conn?.closed === false && conn.destroySoon()))
      return yield* Effect.async<Net.Socket, Socket.SocketError>((resume) => {
        const socket = Net.createConnection({ host: address.host, port: address.port })
        conn = socket
        socket.once("connect", () => {
          socket.write(preamble) // queued ahead of every RPC frame, on every (re)connection
          resume(Effect.succeed(socket))
        })
        socket.on("error", (cause) => resume(Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause }))))
      })
    }),
    { openTimeout: "1 second" }
  )

/** How a runner connects to another: every connection opens with the proof of the secret. */
export const layerClientProtocol = (
  secret: string
): Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization> =>
  Layer.effect(
    Runners.RpcClientProtocol,
    Effect.gen(function*() {
      const serialization = yield* RpcSerialization.RpcSerialization
      const preamble = proof(secret)
      return (address: RunnerAddress) =>
        Effect.flatMap(connect(address, preamble), (socket) =>
          RpcClient.makeProtocolSocket().pipe(
            Effect.provideService(Socket.Socket, socket),
            Effect.provideService(RpcSerialization.RpcSerialization, serialization)
          ))
    })
  )
