/**
 * A Node REPL as an effect (what `flotta repl` runs): the given names in scope, top-level `await`, and
 *
 * - a failure that carries a `_tag` (flotta's typed errors) printed as `<Tag>: <message>`, its stack's frames
 *   only when `verbose`; anything else as Node prints it;
 * - input that is not a terminal (piped, a file) evaluated line by line, in order: each line is handed to the REPL
 *   only once the one before it has settled (its Promise too, when it awaits one), and the session ends after the
 *   last line has settled. A terminal's keys go to the REPL as they come. (A Promise left unawaited that fails
 *   later is reported with a prompt of its own, which hands the next line over early: Node tells the two prompts
 *   apart nowhere we can see.)
 *
 * It ends with `.exit`, Ctrl-D or the end of input; interrupting it closes the REPL.
 */
import { Deferred, Effect, Exit, Mailbox, Stream } from "effect"
import * as readline from "node:readline"
import * as repl from "node:repl"
import { PassThrough } from "node:stream"
import { inspect } from "node:util"

export interface SessionOptions {
  readonly prompt: string
  /** What the REPL has in scope, by name (`{ fleet }`). */
  readonly context: Readonly<Record<string, unknown>>
  readonly input: NodeJS.ReadableStream & { readonly isTTY?: boolean }
  readonly output: NodeJS.WritableStream & { readonly isTTY?: boolean; readonly hasColors?: () => boolean }
  /** Print a failure's stack under its tag and message. */
  readonly verbose: boolean
}

/** A failure that names its kind: an Error with a `_tag` (typed errors reach the REPL wrapped, with a long stack). */
export const isTagged = (value: unknown): value is Error & { readonly _tag: string } =>
  value instanceof Error && typeof (value as { readonly _tag?: unknown })._tag === "string"

/** A tagged failure as the REPL prints it: `<Tag>: <message>`, and with `verbose` the frames of its stack. */
export const describeFailure = (error: Error & { readonly _tag: string }, verbose: boolean): string => {
  const head = `${error._tag}: ${error.message}`
  if (!verbose) return head
  const frames = (error.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line))
  return [head, ...frames].join("\n")
}

/** A Promise already rejected (a call not awaited that failed at once), as `inspect` shows its state. */
const isRejected = (value: Promise<unknown>) => /^Promise \{\s*<rejected>/.test(inspect(value, { depth: 0 }))

/**
 * How the REPL shows a value, and a failure (Node passes both through its writer): tagged failures by
 * `describeFailure`; a rejected Promise with its failure named, not dumped (the REPL reports the rejection
 * itself next, through this writer); everything else as Node's own writer would.
 */
export const writer = (verbose: boolean, colors: boolean): repl.REPLWriter => (value) =>
  isTagged(value)
    ? describeFailure(value, verbose)
    : inspect(value, {
      ...repl.writer.options,
      colors,
      ...(value instanceof Promise && isRejected(value) ? { depth: 0, showProxy: false } : {})
    })

/**
 * Hands `input`'s lines to the REPL through `feed`, each once the one before has settled (the REPL shows its
 * prompt again only then: after a result, a failure, a command, or a line that needs another); then ends `feed`,
 * which ends the REPL.
 */
const feedLines = (server: repl.REPLServer, feed: PassThrough, input: NodeJS.ReadableStream) =>
  Effect.gen(function*() {
    const lines = yield* Mailbox.make<string>()
    const reader = readline.createInterface({ input, crlfDelay: Infinity, terminal: false })
    reader.on("line", (line) => lines.unsafeOffer(line))
    reader.on("close", () => lines.unsafeDone(Exit.void))
    yield* Effect.addFinalizer(() => Effect.sync(() => reader.close()))
    let settled: Deferred.Deferred<void> | undefined
    const displayPrompt = server.displayPrompt.bind(server)
    server.displayPrompt = (preserveCursor) => {
      displayPrompt(preserveCursor)
      if (settled !== undefined) Deferred.unsafeDone(settled, Exit.void)
    }
    yield* Mailbox.toStream(lines).pipe(
      Stream.runForEach((line) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<void>()
          settled = done
          feed.write(`${line}\n`)
          yield* Deferred.await(done)
        })
      )
    )
    feed.end()
  })

/** Runs a REPL until it ends (`.exit`, Ctrl-D, the end of input); interrupted, it closes. */
export const run = Effect.fn("ReplSession.run")(function*(options: SessionOptions) {
  return yield* Effect.scoped(Effect.gen(function*() {
    const terminal = options.input.isTTY === true
    const colors = terminal && options.output.isTTY === true && options.output.hasColors?.() === true
    // A terminal's keys go to the REPL directly; any other input reaches it through `feed`, a line at a time.
    const feed = terminal ? undefined : new PassThrough()
    const server = repl.start({
      prompt: options.prompt,
      input: feed ?? options.input,
      output: options.output,
      ...(terminal ? {} : { terminal: false }),
      writer: writer(options.verbose, colors)
    })
    Object.assign(server.context, options.context)
    const ended = yield* Deferred.make<void>()
    server.on("exit", () => Deferred.unsafeDone(ended, Exit.void))
    yield* Effect.addFinalizer(() => Effect.sync(() => server.close()))
    if (feed !== undefined) yield* Effect.forkScoped(feedLines(server, feed, options.input))
    yield* Deferred.await(ended)
  }))
})
