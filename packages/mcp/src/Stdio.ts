/**
 * The same tools over stdio (what `flotta mcp` runs): newline-delimited JSON-RPC on stdin and stdout, either
 * era, pinned per connection by its opening message. stdout belongs to the protocol: while this serves the
 * process's own stdout, anything written through `console.log` (Effect's default logger among others) goes to
 * stderr instead, and `stderrLogger` sends Effect logs there from the start.
 */
import { Flotta } from "@flotta/core/Flotta"
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio"
import { Effect, Layer, Logger, Runtime } from "effect"
import type { Readable, Writable } from "node:stream"
import * as ServerFactory from "./ServerFactory.js"

export interface StdioOptions {
  /** Default: the process's stdin. */
  readonly stdin?: Readable
  /** Default: the process's stdout. */
  readonly stdout?: Writable
}

/**
 * One logger, writing to stderr: provide it beneath the fleet when serving stdio. It takes the place of Effect's
 * default logger and of the pretty one `NodeRuntime.runMain` installs, both of which write to stdout.
 */
export const stderrLogger = Layer.mergeAll(
  Logger.remove(Logger.defaultLogger),
  Logger.remove(Logger.prettyLoggerDefault),
  Logger.add(Logger.prettyLogger({ stderr: true }))
)

/** While it is held, `console.log`, `console.info` and `console.debug` write to stderr. */
const consoleToStderr = Effect.acquireRelease(
  Effect.sync(() => {
    const saved = { log: console.log, info: console.info, debug: console.debug }
    console.log = console.error
    console.info = console.error
    console.debug = console.error
    return saved
  }),
  (saved) =>
    Effect.sync(() => {
      console.log = saved.log
      console.info = saved.info
      console.debug = saved.debug
    })
)

/**
 * Serves MCP on stdio until the client closes its end (stdin ends) or the scope closes. The connection's SDK
 * server is closed when it returns.
 */
export const serve = Effect.fn("Stdio.serve")(function*(options: StdioOptions = {}) {
  const stdin = options.stdin ?? process.stdin
  const stdout = options.stdout ?? process.stdout
  if (stdout === process.stdout) yield* consoleToStderr
  const runtime = yield* Effect.runtime<Flotta>()
  const runFork = Runtime.runFork(runtime)
  const factory = ServerFactory.make(runtime)
  const ended = Effect.async<void>((resume) => {
    const done = () => resume(Effect.void)
    if (stdin.readableEnded || stdin.destroyed) return done()
    stdin.once("end", done)
    stdin.once("close", done)
    return Effect.sync(() => {
      stdin.off("end", done)
      stdin.off("close", done)
    })
  })
  yield* Effect.acquireRelease(
    Effect.sync(() =>
      serveStdio(() => factory(), {
        transport: new StdioServerTransport(stdin, stdout),
        onerror: (error) => {
          runFork(Effect.logDebug(`MCP stdio: ${error.message}`))
        }
      })
    ),
    (handle) => Effect.promise(() => handle.close().catch(() => undefined))
  )
  yield* Effect.logDebug("MCP server serving stdio")
  yield* ended
})

/** Serves stdio with a given fleet service. */
export const serveWith = Effect.fn("Stdio.serveWith")(function*(fleet: Flotta, options: StdioOptions = {}) {
  return yield* Effect.provideService(serve(options), Flotta, fleet)
})
