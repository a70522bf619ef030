/**
 * Commands that drive a running `flotta serve` over its MCP endpoint (see Connection): list, status, ask, prompt,
 * result, reports, transcript, close, unpark. `reports` and `transcript` also read the store itself, read-only (no lock, so beside a running serve too):
 * with `--store`, or when no serve answers and the config's store (the default `.flotta/state.db` included) is an
 * SQLite file that exists.
 */
import { Args, Command, Options } from "@effect/cli"
import type { TurnRecord } from "@flotta/core/Agent"
import type { RunNotFound, StoreUnavailable, TurnPending } from "@flotta/core/Errors"
import * as Operations from "@flotta/core/Operations"
import type { RunError, VerifyError } from "@flotta/core/Run"
import type { NoDiff, RunDiff } from "@flotta/core/RunDiff"
import * as RunInbox from "@flotta/core/RunInbox"
import * as RunList from "@flotta/core/RunList"
import type { RunQuery, RunView } from "@flotta/core/RunList"
import * as RunOutcome from "@flotta/core/RunOutcome"
import * as RunRecord from "@flotta/core/RunRecord"
import * as Store from "@flotta/core/Store"
import type { ReportEntry, StoreShape } from "@flotta/core/Store"
import { Effect, Either, Option, Schema } from "effect"
import * as AgentCommands from "./AgentCommands.js"
import * as Answers from "./Answers.js"
import * as ConfigFile from "./ConfigFile.js"
import type { Connection } from "./Connection.js"
import {
  agentToolCommand,
  call,
  callAndPrint,
  clientConfig,
  connection,
  connectTo,
  endpointOf,
  withClient
} from "./Connection.js"
import type { ServerUnreachable, ToolFailed, Unauthorized } from "./Connection.js"
import * as Flags from "./Flags.js"
import type { McpClient } from "./McpClient.js"
import * as Output from "./Output.js"
import type * as RunViews from "./RunViews.js"
import * as Shared from "./SharedOptions.js"
import * as StoreAccess from "./StoreAccess.js"
import * as StoreTarget from "./StoreTarget.js"
import * as Views from "./Views.js"

const name = Flags.nameArgument("name", "The agent's name.")
const text = Flags.textArgument("text", "The prompt: what the agent should do.")

const list = Command.make(
  "list",
  { ...connection, label: Flags.labels("List only the agents with this label (repeat it: with every one of them).") },
  (flags) =>
    callAndPrint(flags, Operations.toolName("list"), Flags.labelsOf(flags.label), Answers.List, ({ agents }) => {
      if (agents.length === 0) return "no agents"
      // The status column is as wide as its longest entry (`waiting_approval`, `parked until …`).
      const statuses = agents.map((a) => Views.describeStatus(a))
      const width = Math.max(10, ...statuses.map((status) => status.length))
      return agents.map((a, i) =>
        `${a.name.padEnd(24)} ${statuses[i]!.padEnd(width)} ${String(a.model ?? "-").padEnd(12)} ` +
        `queued ${a.queued}  turns ${a.totals.turns}  $${a.totals.costUsd.toFixed(4)}` +
        (a.context?.percent == null ? "" : `  context ${a.context.percent}%`) +
        (a.host === undefined ? "" : `  on ${a.host}`)
      ).join("\n")
    }, { storeHealth: true })
).pipe(Command.withDescription("List the live agents of a running `flotta serve` (and the store, when degraded)."))

const status = Command.make("status", { ...connection, name }, (flags) =>
  callAndPrint(
    flags,
    Operations.toolName("status"),
    { name: flags.name },
    Answers.Status,
    (v) =>
      `${v.name}: ${Views.describeStatus(v)}${v.current ? ` (turn ${v.current})` : ""}, ${v.queued} queued, ` +
      `${v.turns} turns` + (v.context === undefined ? "" : `, context ${Views.describeContext(v.context)}`),
    { storeHealth: true }
  )).pipe(Command.withDescription("An agent's status (and the store's, when degraded)."))

/** Waits in bounded steps until the turn is done (each server-side wait is at most 50 s). */
const waitUntilDone = (client: McpClient, agent: string, first: AgentCommands.WaitAnswer) =>
  Effect.iterate(first, {
    while: (answer) => !answer.done,
    body: (answer) =>
      call(
        client,
        Operations.toolName("wait"),
        { name: agent, turnId: answer.turnId, timeoutSeconds: 45 },
        Answers.WaitResult
      )
  })

const ask = Command.make("ask", { ...connection, name, text }, (flags) =>
  withClient(
    flags,
    (client) =>
      call(
        client,
        Operations.toolName("ask"),
        { name: flags.name, text: flags.text, timeoutSeconds: 45 },
        Answers.WaitResult
      ).pipe(
        Effect.flatMap((first) => waitUntilDone(client, flags.name, first))
      ),
    AgentCommands.renderWaited
  )).pipe(Command.withDescription("Ask an agent and print its reply."))

const prompt = Command.make(
  "prompt",
  { ...connection, name, text },
  (flags) =>
    callAndPrint(
      flags,
      Operations.toolName("prompt"),
      { name: flags.name, text: flags.text },
      Answers.Prompted,
      (v) => v.turnId
    )
).pipe(Command.withDescription("Queue a prompt and print its turn id at once."))

const result = Command.make(
  "result",
  {
    ...connection,
    name,
    turn: Flags.argument(
      "turn",
      "The turn id `prompt` printed (t1, t2, ...), or latest (the default).",
      Schema.String.pipe(Schema.pattern(/^(latest|t[1-9][0-9]*)$/)),
      "is not a turn id (t1, t2, ...) or latest"
    ).pipe(Args.optional)
  },
  (flags) =>
    callAndPrint(
      flags,
      Operations.toolName("result"),
      { name: flags.name, turnId: Option.getOrElse(flags.turn, () => "latest") },
      Answers.Result,
      (v) => v.result.text
    )
).pipe(Command.withDescription("Print a finished turn's reply (TurnPending while it runs)."))

const unpark = Command.make(
  "unpark",
  {
    ...connection,
    name: Flags.nameArgument("name", "Only this agent (the rest of its credentials' group stays parked); default: all.")
      .pipe(Args.optional)
  },
  (flags) =>
    callAndPrint(
      flags,
      Operations.toolName("unpark"),
      Shared.ifSome("agent", flags.name),
      Answers.Unparked,
      ({ parking, unparked }) => {
        const still = Views.describeParking(parking)
        return [
          unparked.length === 0 ? "nothing to unpark: no agent was parked" : `unparked ${unparked.join(", ")}`,
          ...still.map((line) => `still ${line}`)
        ].join("\n")
      }
    )
).pipe(
  Command.withDescription(
    "Resume agents parked at a usage limit now, instead of at the reset (staggered); a parked turn resumes with a " +
      "short continuation."
  )
)

const close = agentToolCommand({
  command: "close",
  name,
  tool: Operations.toolName("close"),
  answer: Answers.Closed,
  render: (v) => `closed ${v.name}`,
  description: "Close an agent."
})

// ------------------------------------------------------------------------------- the serve, or the store

interface Transcript {
  readonly name: string
  readonly total: number
  readonly turns: ReadonlyArray<TurnRecord>
  /** Why and when the agent closed, when it is closed. */
  readonly closed?: { readonly reason: string; readonly at?: string }
}

/** Where `reports`, `transcript` and `diff` read: a running serve, or the store itself. */
export interface Source {
  readonly reports: (
    query: { readonly cursor: number; readonly limit: number; readonly agent: Option.Option<string> }
  ) => Effect.Effect<
    { readonly entries: ReadonlyArray<ReportEntry>; readonly next: number },
    ToolFailed | ServerUnreachable | Unauthorized | StoreUnavailable
  >
  readonly transcript: (
    name: string,
    last: number | undefined
  ) => Effect.Effect<
    Transcript,
    ToolFailed | ServerUnreachable | Unauthorized | StoreUnavailable | StoreAccess.NotInStore
  >
  readonly diff: (name: string) => Effect.Effect<
    RunDiff,
    ToolFailed | ServerUnreachable | Unauthorized | StoreUnavailable | RunNotFound | NoDiff
  >
  /** The runs and verifies, newest first. */
  readonly runs: (
    query: RunQuery
  ) => Effect.Effect<ReadonlyArray<RunView>, ToolFailed | ServerUnreachable | Unauthorized | StoreUnavailable>
  /** One run's outcome: its result, or its own typed failure. */
  readonly runResult: (
    name: string
  ) => Effect.Effect<
    RunViews.RunAnswer | RunViews.VerifyAnswer,
    | ToolFailed
    | ServerUnreachable
    | Unauthorized
    | StoreUnavailable
    | RunNotFound
    | TurnPending
    | RunError
    | VerifyError
  >
}

/** A serve's refusal of a name it has no run of. */
const runNotFound = (error: ToolFailed | ServerUnreachable | Unauthorized) =>
  error._tag === "ToolFailed" && error.error._tag === "RunNotFound"

/**
 * A running serve; what it does not know of (a shell run's record it has not imported, as an older serve would not)
 * is read from the records waiting in its store's inbox.
 */
const serverSource = (client: McpClient, inbox: Source): Source => ({
  reports: ({ agent, cursor, limit }) =>
    call(client, "flotta_reports", {
      cursor,
      limit,
      ...Shared.ifSome("agent", agent)
    }, Answers.Reports),
  transcript: (name, last) =>
    call(
      client,
      Operations.toolName("transcript"),
      { name, ...(last === undefined ? {} : { last }) },
      Answers.Transcript
    ),
  diff: (name) =>
    call(client, Operations.toolName("diff"), { name }, Answers.Diff).pipe(
      Effect.catchIf(runNotFound, (error) => Effect.orElse(inbox.diff(name), () => Effect.fail(error)))
    ),
  runs: (query) =>
    Effect.zipWith(
      call(client, Operations.toolName("runs"), { ...query }, Answers.Runs),
      inbox.runs({}),
      ({ runs }, waiting) => {
        const known = new Set(runs.map((run) => run.name))
        return RunList.selectRuns([...runs, ...waiting.filter((run) => !known.has(run.name))], query)
      }
    ),
  runResult: (name) =>
    call(client, Operations.toolName("runResult"), { name }, Answers.RunOutcome).pipe(
      Effect.map((answer) => answer.result),
      Effect.catchIf(runNotFound, (error) => Effect.orElse(inbox.runResult(name), () => Effect.fail(error)))
    )
})

const storeSource = (store: StoreShape): Source => ({
  reports: ({ agent, cursor, limit }) =>
    store.readReports({
      since: cursor,
      limit,
      ...Shared.ifSome("agent", agent)
    }),
  transcript: (name, last) => StoreAccess.transcript(store, name, last),
  diff: (name) => StoreAccess.diff(store, name),
  runs: (query) => StoreAccess.runs(store, query),
  runResult: (name) => RunOutcome.storedOutcome(store, name)
})

/** The records waiting in an inbox, read as a store of their own. */
const inboxSource = (inbox: string | undefined) =>
  Effect.map(
    inbox === undefined ? Effect.succeed([]) : RunInbox.records(inbox),
    (records) => storeSource(RunRecord.overlay(Store.makeMemory(), records))
  )

export const storeFlag = Options.text("store").pipe(
  Options.withPseudoName("path"),
  Flags.optional(
    "Read this store directly (read-only; beside a running serve too) instead of asking a serve: an SQLite " +
      "file such as .flotta/state.db, or a postgres:// URL. Without it, the store is read when no serve answers."
  )
)

/** The store `--store` names: an SQLite file (relative to here) or a Postgres URL; a memory store has no reader. */
const storeTarget = (text: string) => {
  if (text.trim() === "memory") {
    return Effect.fail(Shared.badValue("--store", text, "lives only inside its fleet: ask the serve instead"))
  }
  return Either.match(ConfigFile.readStoreTarget(text, process.cwd()), {
    onLeft: () =>
      Effect.fail(Shared.badValue("--store", text, "is not the path of an SQLite file or a postgres:// URL")),
    onRight: Effect.succeed
  })
}

/**
 * Runs `body` against `--store`, else a running serve, else (when none answers, no `--url` was given, and the
 * config's store is an SQLite file that exists) that file, read-only, saying so on stderr.
 */
export const withSource = Effect.fn("ClientCommands.withSource")(
  function*<A, E, R>(
    flags: Connection & { readonly store: Option.Option<string> },
    body: (source: Source) => Effect.Effect<A, E, R>
  ) {
    return yield* Effect.scoped(Effect.gen(function*() {
      if (Option.isSome(flags.store)) {
        const target = yield* storeTarget(flags.store.value)
        const inbox = StoreTarget.inboxOf(target, process.cwd())
        return yield* body(storeSource(yield* StoreAccess.openWithInbox(target, inbox)))
      }
      const config = yield* clientConfig(flags)
      const endpoint = endpointOf(flags, config)
      const stored = StoreTarget.storeFor(config, true)
      const inbox = StoreTarget.inboxOf(stored, config.dir)
      const client = yield* Effect.either(connectTo(endpoint))
      if (Either.isRight(client)) return yield* body(serverSource(client.right, yield* inboxSource(inbox)))
      // A serve that answered (and refused the token) is no reason to read behind its back: its refusal stands.
      if (
        client.left._tag === "ServerUnreachable" && Option.isNone(flags.url) && stored !== "memory" &&
        "sqlite" in stored && StoreAccess.exists(stored)
      ) {
        yield* Output.stderr(`flotta: no serve answered at ${endpoint.url}; reading the store ${stored.sqlite}`)
        return yield* body(storeSource(yield* StoreAccess.openWithInbox(stored, inbox)))
      }
      return yield* client.left
    }))
  }
)

const reports = Command.make(
  "reports",
  {
    ...connection,
    store: storeFlag,
    follow: Options.boolean("follow").pipe(
      Options.withAlias("f"),
      Options.withDescription("Keep printing new entries.")
    ),
    agent: Flags.agentName("agent").pipe(Flags.optional("Only this agent's entries.")),
    since: Flags.nonNegativeInteger("since").pipe(Flags.optional("Entries after this sequence number."))
  },
  (flags) =>
    withSource(flags, (source) =>
      Effect.gen(function*() {
        let cursor = Option.getOrElse(flags.since, () => 0)
        while (true) {
          const page = yield* source.reports({ cursor, limit: 500, agent: flags.agent })
          for (const entry of page.entries) {
            yield* Output.stdout(flags.json ? JSON.stringify(entry) : Views.formatEntry(entry))
          }
          cursor = page.next
          if (page.entries.length === 500) continue
          if (!flags.follow) return
          yield* Effect.sleep("1 second")
        }
      }))
).pipe(
  Command.withDescription("Print the report log (--follow keeps printing), from a running serve or the store itself.")
)

const transcript = Command.make(
  "transcript",
  {
    ...connection,
    store: storeFlag,
    name,
    last: Flags.positiveInteger("last").pipe(Flags.optional("Only the last N turns."))
  },
  (flags) =>
    withSource(flags, (source) =>
      Effect.gen(function*() {
        const value = yield* source.transcript(flags.name, Option.getOrUndefined(flags.last))
        yield* Output.stdout(
          flags.json
            ? JSON.stringify(value, null, 2)
            : Views.renderTranscript(value.name, value.turns, value.total, value.closed)
        )
      }))
).pipe(
  Command.withDescription(
    "Print an agent's turns, oldest first: prompt, tool calls, permission decisions, reply or error, cost and " +
      "time (--json: the records), from a running serve or the store itself."
  )
)

export const commands = [list, status, ask, prompt, result, reports, transcript, close, unpark] as const
