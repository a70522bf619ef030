/**
 * Human approvals from the command line. `flotta approvals`, `flotta approve ID` and `flotta deny ID` decide the
 * tool calls waiting in a running `flotta serve`, over its MCP endpoint (the approval tools), with the connection
 * flags of the other client commands (`--url`, `--token`, `--json`, `--config`); a decision taken here is
 * recorded as decided by `cli`. A decision on an unknown id (ApprovalNotFound) or on one no longer pending
 * (ApprovalExpired) ends the command with its message and exit code 12.
 *
 * `answerAtTerminal` is the other half, for `flotta run --ask`: a one-shot run has no server, so each pending
 * approval is put to the person at the terminal, on stderr, and their answer decided.
 */
import { Command, Options } from "@effect/cli"
import type { Approval } from "@flotta/core/Approvals"
import type { Flotta } from "@flotta/core/Flotta"
import * as Operations from "@flotta/core/Operations"
import { Clock, Duration, Effect, Option, Schema, Stream } from "effect"
import * as readline from "node:readline"
import * as Answers from "./Answers.js"
import { call, connection, ToolFailed, withClient } from "./Connection.js"
import type { Connection } from "./Connection.js"
import * as Flags from "./Flags.js"
import type { McpClient } from "./McpClient.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"

/** What `decidedBy` says for a decision taken from the command line. */
export const DECIDED_BY = "cli"

// ------------------------------------------------------------------------------------------------ views

const flat = (text: string) => text.replace(/\s+/g, " ").trim()

const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`)

/** Fields that say what a tool call acts on: shown whole (up to the line's limit), never shortened on their own. */
const TARGETS = new Set(["file_path", "notebook_path", "path", "command", "url", "pattern"])

/**
 * A tool's input on one line: `{file_path: "/tmp/a.txt", content: "hello…"}`. What it acts on (a path, a
 * command) is shown whole; other long values are cut, and so is the whole line at `max`.
 */
export const describeInput = (input: Readonly<Record<string, unknown>>, max = 72): string => {
  const fields = Object.entries(input).map(([key, value]) => {
    const text = typeof value === "string" ? value : flat(JSON.stringify(value) ?? "null")
    const shown = TARGETS.has(key) ? text : cut(text, 40)
    return `${key}: ${typeof value === "string" ? JSON.stringify(shown) : shown}`
  })
  return cut(`{${fields.join(", ")}}`, max)
}

/** How long until `expiresAt`: `42s`, `14m 58s`, `2h 5m`; `due now` once it has passed. */
export const timeLeft = (expiresAt: string, now: number): string => {
  const seconds = Math.floor((Date.parse(expiresAt) - now) / 1000)
  if (seconds <= 0) return "due now"
  if (seconds < 60) return `${seconds}s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${seconds % 60}s`
  return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`
}

/** Where an approval stands: the time left while pending, else how it ended and who or what ended it. */
const standing = (approval: Approval, now: number) =>
  approval.status === "pending"
    ? `${timeLeft(approval.expiresAt, now)} left`
    : approval.status === "expired"
    ? `expired (${approval.decidedBy ?? "?"})`
    : `${approval.status} by ${approval.decidedBy ?? "?"}`

/** The approvals as a table: id, agent, tool, the input on one line, time left (or how it ended). */
export const renderApprovals = (approvals: ReadonlyArray<Approval>, now: number, all = false): string => {
  if (approvals.length === 0) return all ? "no approvals" : "no approvals pending"
  const rows = approvals.map((a) => [a.id, a.agent, a.tool, describeInput(a.input, 60), standing(a, now)])
  const header = ["ID", "AGENT", "TOOL", "INPUT", all ? "LEFT / ENDED" : "LEFT"]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)))
  return [header, ...rows]
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "))
    .join("\n")
}

/** A decision, as the command confirms it. */
export const renderDecided = (approval: Approval, always: boolean): string => {
  const what = `${approval.tool} ${describeInput(approval.input, 200)} for ${approval.agent}`
  const verb = approval.status === "allowed" ? "allowed" : approval.status === "denied" ? "denied" : approval.status
  return `${verb} ${approval.id}: ${what}` +
    (approval.message === null ? "" : ` (${approval.message})`) +
    (always && approval.status === "allowed" ? `\n${approval.tool} is allowed for ${approval.agent} from now on` : "")
}

// ------------------------------------------------------------------------------------------------ commands

const APPROVAL_TAGS = new Set(["ApprovalNotFound", "ApprovalExpired"])

/** What to do next, said for the command line (the server's advice names MCP tools). */
const ADVICE: Record<string, string> = {
  ApprovalNotFound: "`flotta approvals` lists the pending ones",
  ApprovalExpired: "`flotta approvals --all` shows how it ended"
}

/** A refusal of the approval tools, with this command's advice instead of the server's (same tag, same exit code). */
const forTheCommandLine = (error: ToolFailed) => {
  if (!APPROVAL_TAGS.has(error.error._tag)) return error
  const message = error.error.message.trimEnd().replace(/[.]$/, "")
  return new ToolFailed({
    tool: error.tool,
    error: error.error,
    text: `${error.error._tag}: ${message}. ${ADVICE[error.error._tag]}.`
  })
}

const id = Flags.argument(
  "id",
  "The approval's id, as `flotta approvals` lists it (ap_...).",
  Schema.String.pipe(Schema.pattern(/^\S+$/)),
  "is not an approval id (ap_...)"
)

const message = (description: string) =>
  Options.text("message").pipe(
    Options.withAlias("m"),
    Options.withPseudoName("text"),
    Flags.optional(description)
  )

const approvals = Command.make(
  "approvals",
  {
    ...connection,
    all: Options.boolean("all").pipe(
      Options.withDescription("Also the approvals that ended lately (allowed, denied, expired), newest first.")
    ),
    agent: Flags.agentName("agent").pipe(Flags.optional("Only this agent's approvals."))
  },
  (flags) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      withClient(
        flags,
        (client) =>
          call(client, Operations.toolName("approvals"), {
            ...(flags.all ? { all: true } : {}),
            ...Shared.ifSome("agent", flags.agent)
          }, Answers.Approvals),
        (value) => renderApprovals(value.approvals, now, flags.all)
      ))
).pipe(
  Command.withDescription(
    "List the tool calls waiting for a human in a running `flotta serve`: id, agent, tool, its input and the time " +
      "left before it expires (a deny). Decide them with `flotta approve ID` or `flotta deny ID`."
  )
)

/** Decides one approval over MCP, as decided by `cli`. */
const decide = (
  flags: Connection & { readonly id: string; readonly message: Option.Option<string> },
  behavior: "allow" | "deny",
  always: boolean
) =>
  withClient(
    flags,
    (client: McpClient) =>
      call(client, Operations.toolName("decide"), {
        id: flags.id,
        behavior,
        by: DECIDED_BY,
        ...(always ? { always: true } : {}),
        ...Shared.ifSome("message", flags.message)
      }, Answers.Decided).pipe(Effect.mapError((e) => (e._tag === "ToolFailed" ? forTheCommandLine(e) : e))),
    (value) => renderDecided(value, always)
  )

const approve = Command.make(
  "approve",
  {
    ...connection,
    id,
    always: Options.boolean("always").pipe(
      Options.withDescription("Also allow this tool for the rest of the agent's life, without asking again.")
    ),
    message: message("A note kept with the decision.")
  },
  (flags) => decide(flags, "allow", flags.always)
).pipe(Command.withDescription("Allow a pending approval: the waiting tool call runs."))

const deny = Command.make(
  "deny",
  {
    ...connection,
    id,
    message: message("Why: the model sees it with the denial.")
  },
  (flags) => decide(flags, "deny", false)
).pipe(Command.withDescription("Deny a pending approval: the tool call does not run, and the model is told why."))

export const commands = [approvals, approve, deny] as const

// ------------------------------------------------------------------------------------------------ the terminal

type Answer = "allow" | "deny" | "always"

/** A typed answer: y, yes, n, no, a, always (any case); anything else is no answer. */
export const parseAnswer = (text: string): Answer | undefined => {
  const word = text.trim().toLowerCase()
  if (word === "y" || word === "yes") return "allow"
  if (word === "n" || word === "no") return "deny"
  if (word === "a" || word === "always") return "always"
  return undefined
}

/** The question put to the person at the terminal. */
export const question = (approval: Approval) =>
  `Allow ${approval.tool} ${describeInput(approval.input, 400)}? [y]es / [n]o / [a]lways `

/**
 * One line typed at the terminal (stdin, echoed on stderr), or `undefined` when stdin ends. The line editor
 * lives only while the question is open, so the terminal is left as it was; Ctrl-C at the question stops the
 * command as it would anywhere else.
 */
const readLine = (prompt: string) =>
  Effect.async<string | undefined>((resume) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true })
    const controller = new AbortController()
    let done = false
    const finish = (answer: string | undefined) => {
      if (done) return
      done = true
      rl.close()
      resume(Effect.succeed(answer))
    }
    // The line editor takes Ctrl-C as a key: hand it back to the process, whose interruption ends the question.
    rl.on("SIGINT", () => {
      done = true
      rl.close()
      process.kill(process.pid, "SIGINT")
    })
    rl.on("close", () => finish(undefined))
    rl.question(prompt, { signal: controller.signal }, (answer) => finish(answer))
    return Effect.sync(() => {
      done = true
      controller.abort()
      rl.close()
    })
  })

/** Asks until a valid answer comes; `undefined` when stdin ended first. */
const askUntilAnswered = (approval: Approval): Effect.Effect<Answer | undefined> =>
  Effect.flatMap(readLine(question(approval)), (typed) => {
    if (typed === undefined) return Effect.succeed(undefined)
    const answer = parseAnswer(typed)
    return answer !== undefined
      ? Effect.succeed(answer)
      : Effect.zipRight(Output.stderr("flotta: answer y (yes), n (no) or a (always)"), askUntilAnswered(approval))
  })

/** Puts one approval to the person at the terminal, and decides it with their answer (by `cli`). */
const putToTerminal = (fleet: Flotta, approval: Approval) =>
  Effect.gen(function*() {
    // One asked while an earlier question was open may have ended meanwhile (its time ran out, its turn ended).
    const pending = yield* fleet.approvals({ agent: approval.agent })
    if (!pending.some((a) => a.id === approval.id)) return
    const now = yield* Clock.currentTimeMillis
    const left = Date.parse(approval.expiresAt) - now
    yield* Output.stderr(
      `flotta: ${approval.agent} asks to use ${approval.tool} (${approval.id}, ${timeLeft(approval.expiresAt, now)} ` +
        "left to answer)"
    )
    const answered = yield* askUntilAnswered(approval).pipe(Effect.timeoutOption(Duration.millis(Math.max(0, left))))
    if (Option.isNone(answered)) {
      return yield* Output.stderr(`\nflotta: no answer in time: ${approval.tool} is denied (the approval expired)`)
    }
    const answer = answered.value ?? "deny"
    const decided = yield* fleet.decide(approval.id, {
      behavior: answer === "deny" ? "deny" : "allow",
      by: DECIDED_BY,
      ...(answer === "always" ? { always: true } : {}),
      ...(answered.value === undefined ? { message: "stdin closed before anyone answered" } : {})
    }).pipe(
      Effect.map((a) => renderDecided(a, answer === "always")),
      Effect.catchAll((error) => Effect.succeed(`${error._tag}: ${error.message}`))
    )
    yield* Output.stderr(`flotta: ${decided}`)
  })

/**
 * For a fleet in this process (a one-shot run): from now until the scope closes, each new pending approval is put
 * to the person at the terminal, one at a time and oldest first, while `hold` keeps other output (the spinner)
 * off the line. Subscribed before it returns, so nothing requested afterwards is missed.
 */
export const answerAtTerminal = Effect.fn("ApprovalCommands.answerAtTerminal")(
  function*(
    fleet: Flotta,
    hold: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = (effect) => effect
  ) {
    const requests = yield* fleet.subscribeApprovals
    yield* requests.pipe(
      Stream.runForEach((approval) => hold(putToTerminal(fleet, approval))),
      Effect.forkScoped
    )
  }
)
