/**
 * `flotta run "prompt"`: one task in, the answer on stdout (the structured output as JSON when a schema is
 * given), a cost and duration footer on stderr, and an exit code that says how it ended. A one-shot run keeps
 * its state in memory: it never takes (or waits for) the store a running serve holds. As it ends, its record lands
 * in the project's store (see RunRecording), so `flotta runs`, `flotta diff` and a serve show it like their own.
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Flotta } from "@flotta/core/Flotta"
import type { Policy } from "@flotta/core/Permission"
import type { RunOptions } from "@flotta/core/Run"
import { Effect, Either, Exit, Option } from "effect"
import * as path from "node:path"
import * as Composition from "./Composition.js"
import * as DetachedRun from "./DetachedRun.js"
import { describeExitCodes } from "./ExitCode.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import * as PermissionFlags from "./PermissionFlags.js"
import * as RunRecording from "./RunRecording.js"
import * as RunViews from "./RunViews.js"
import * as SandboxFlags from "./SandboxFlags.js"
import * as Shared from "./SharedOptions.js"
import * as Spinner from "./Spinner.js"

const options = {
  cwd: Flags.directory("cwd").pipe(Flags.optional("Working directory (default: the current one).")),
  model: Flags.nonEmpty("model", "model").pipe(Flags.optional("Model alias or id, e.g. sonnet.")),
  name: Flags.agentName("name").pipe(Flags.optional(`The run's name (and its worktree's): ${Flags.NAME_RULE}.`)),
  ...PermissionFlags.options({
    permission: "One of read_only (Read, Glob, Grep), full (every tool) or ask (read-only tools, and you are asked " +
      "about every other one); --allow lists tools instead.",
    allow: "Allow exactly these tools (repeat, or comma-separated): --allow Read,Edit.",
    ask: "Ask you at this terminal before each use of these tools (repeat, or comma-separated): --ask Write --ask " +
      "Bash. The others are --allow's, else the read-only ones."
  }),
  worktree: Options.boolean("worktree").pipe(
    Options.withDescription("Run in its own git worktree: <repo>/.claude/worktrees/<name>.")
  ),
  cleanup: Options.boolean("cleanup").pipe(
    Options.withDescription("After success, commit what the run left and remove its worktree (the branch stays).")
  ),
  systemPrompt: Options.text("system-prompt").pipe(Flags.optional("Replace the system prompt.")),
  appendSystemPrompt: Options.text("append-system-prompt").pipe(Flags.optional("Add to the system prompt.")),
  jsonSchema: Options.text("json-schema").pipe(
    Options.withPseudoName("json"),
    Flags.optional("A JSON Schema (inline, or a path to a .json file): print the structured output.")
  ),
  maxTurns: Flags.positiveInteger("max-turns").pipe(
    Flags.optional("Stop after this many model calls (a whole number above 0).")
  ),
  maxBudgetUsd: Flags.positiveNumber("max-budget-usd").pipe(
    Flags.optional("Stop past this cost in USD (a number above 0, e.g. 0.5).")
  ),
  timeout: Flags.duration("timeout").pipe(
    Flags.optional("Interrupt the run after this long: 90, 90s, 500ms, 5m, 1h (default 180s).")
  ),
  attempts: Flags.positiveInteger("attempts").pipe(
    Flags.optional(
      "Best of N: run this many attempts at once, each in its own worktree, each told its number (FLOTTA_ATTEMPT, " +
        "{{attempt}} in the prompt); the winner is picked among those that pass every --check."
    )
  ),
  check: Options.text("check").pipe(
    Options.withPseudoName("command"),
    Options.withDescription(
      "A shell command each attempt must pass in its worktree once its turn succeeds (repeat it for more)."
    ),
    Options.repeated
  ),
  pick: Flags.choice("pick", ["first", "cheapest"]).pipe(
    Flags.optional(
      "first (the default): the first attempt to pass wins and the rest are interrupted; cheapest: all finish, " +
        "and the cheapest that passed wins."
    )
  ),
  keepAll: Options.boolean("keep-all").pipe(
    Options.withDescription("Keep every attempt's worktree (by default the losers' go, their work on their branch).")
  ),
  json: Options.boolean("json").pipe(
    Options.withDescription(
      "Print the run's whole outcome as JSON (answer, structured output, cost, duration, session, worktree) " +
        "instead of the answer and its footer."
    )
  ),
  ...SandboxFlags.options,
  detach: Options.boolean("detach").pipe(
    Options.withAlias("serve"),
    Options.withDescription(
      "Start the run inside the running `flotta serve` (over its MCP endpoint) and print its name at once; follow " +
        "it with `flotta runs NAME` and `flotta diff NAME`."
    )
  ),
  url: Flags.url("url").pipe(
    Flags.optional(
      "With --detach: the serve's MCP endpoint (default: from the config, else http://127.0.0.1:4099/mcp)."
    )
  ),
  token: Options.redacted("token").pipe(
    Options.withPseudoName("token"),
    Flags.optional("With --detach: the serve's bearer token (default: FLOTTA_MCP_TOKEN, else the config's mcp.token).")
  ),
  simulate: Shared.simulate,
  config: Shared.config
}

const invalid = (field: string, reason: string) => Shared.invalid(field, reason)
const badSchema = (text: string, reason: string) => Shared.badValue("--json-schema", text, reason)

const readSchema = Effect.fn("RunCommand.readSchema")(function*(text: string, cwd: string) {
  const trimmed = text.trim()
  let source = trimmed
  if (trimmed.length === 0) return yield* badSchema(text, "is empty: give a JSON Schema, or a path to one")
  if (!/^[{[]/.test(trimmed)) {
    const fs = yield* FileSystem.FileSystem
    const file = path.resolve(cwd, trimmed)
    source = yield* fs.readFileString(file).pipe(
      Effect.mapError(() => badSchema(text, `is not inline JSON, and there is no file ${file}`))
    )
  }
  const parsed = yield* Effect.try({
    try: () => JSON.parse(source) as unknown,
    catch: (e) =>
      source === trimmed
        ? badSchema(text, `is not valid JSON (${(e as Error).message})`)
        : badSchema(text, `is not a file of valid JSON (${(e as Error).message})`)
  })
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return yield* badSchema(text, "is not a JSON Schema: a schema is a JSON object, e.g. {\"type\":\"object\"}")
  }
  return parsed as Record<string, unknown>
})

/** Whether a permission leaves some tool calls to a person. */
export const asksHuman = (permission: Policy) =>
  permission === "ask" || (typeof permission === "object" && (permission.ask?.length ?? 0) > 0)

/**
 * A one-shot run has no server to decide its approvals through, so the person deciding is the one at this
 * terminal; with no terminal to ask on, nobody could, and every asked call would only time out.
 */
const needsTerminal = (flag: "--ask" | "--permission") =>
  invalid(
    flag,
    "a tool under ask waits for your answer at this terminal, and stdin is not one: run it from a terminal, or " +
      "start the fleet with `flotta serve` and decide with `flotta approvals` and `flotta approve`"
  )

export const command = Command.make(
  "run",
  {
    ...options,
    prompt: Flags.textArgument("prompt", "The task: what the agent should do.")
  },
  (flags) =>
    Effect.gen(function*() {
      const cwd = path.resolve(Option.getOrElse(flags.cwd, () => "."))
      const config = yield* Shared.loadConfig(flags.config)
      const permission = yield* PermissionFlags.permissionOf(flags.permission, flags.allow, flags.ask)
      const asks = asksHuman(permission)
      const detached = flags.detach
        ? DetachedRun.refusal({ asks, simulate: flags.simulate, permissionAsk: permission === "ask" })
        : DetachedRun.needsDetach(flags)
      if (detached !== null) return yield* detached
      if (asks && !Output.stdinIsTTY()) return yield* needsTerminal(permission === "ask" ? "--permission" : "--ask")
      const jsonSchema = Option.isSome(flags.jsonSchema) ? yield* readSchema(flags.jsonSchema.value, cwd) : undefined
      const timeout = Option.getOrUndefined(flags.timeout)
      const best = Option.isSome(flags.attempts) || flags.check.length > 0
      if (flags.cleanup && !flags.worktree && !best) {
        return yield* invalid("--cleanup", "cleanup removes a run's worktree: add --worktree")
      }
      const empty = flags.check.find((command) => command.trim().length === 0)
      if (empty !== undefined) return yield* Shared.badValue("--check", empty, "is empty")
      if (Option.isSome(flags.pick) && !best) return yield* invalid("--pick", "picks among attempts: add --attempts")
      if (flags.keepAll && !best) return yield* invalid("--keep-all", "keeps attempts' worktrees: add --attempts")

      const runOptions: RunOptions = {
        prompt: flags.prompt,
        cwd,
        permission,
        ...(flags.worktree ? { worktree: true } : {}),
        ...(flags.cleanup ? { cleanup: true } : {}),
        ...Shared.ifSome("model", flags.model),
        ...Shared.ifSome("name", flags.name),
        ...Shared.ifSome("systemPrompt", flags.systemPrompt),
        ...Shared.ifSome("appendSystemPrompt", flags.appendSystemPrompt),
        ...(jsonSchema === undefined ? {} : { jsonSchema }),
        ...Shared.ifSome("maxTurns", flags.maxTurns),
        ...Shared.ifSome("maxBudgetUsd", flags.maxBudgetUsd),
        ...(timeout === undefined ? {} : { timeout }),
        ...SandboxFlags.sandboxOf(flags),
        ...Shared.ifSome("attempts", flags.attempts),
        ...(flags.check.length === 0 ? {} : { verify: { checks: flags.check } }),
        ...Shared.ifSome("pick", flags.pick),
        ...(flags.keepAll ? { keepAll: true } : {})
      }
      if (flags.detach) return yield* DetachedRun.start(flags, runOptions)
      // The run is recorded in the project's store, as a serve's run is: a name taken there is refused first.
      const recording = RunRecording.recordingFor(config)
      if (Option.isSome(flags.name) && Option.isSome(recording)) {
        yield* RunRecording.checkName(recording.value, flags.name.value)
      }
      const spinner = yield* Spinner.start("flotta run")
      const { changed, exit, name, written } = yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        // Only a run that asks a person loads the approvals' questions.
        if (asks) {
          const approvals = yield* Effect.promise(() => import("./ApprovalCommands.js"))
          yield* approvals.answerAtTerminal(fleet, spinner.hold)
        }
        const ran = yield* RunRecording.run(fleet, { ...runOptions, onActivity: spinner.onActivity }, recording)
        // A run in a worktree says what it changed, from the diff the fleet recorded as it ended.
        const worktree = Exit.isSuccess(ran.exit) && ran.exit.value.kind === "run" && ran.exit.value.worktree
        const changed = worktree ? yield* Effect.option(fleet.diff(ran.name)) : Option.none()
        return { ...ran, changed }
      }).pipe(
        Effect.scoped,
        Effect.ensuring(spinner.stop),
        Effect.provide(Composition.layer(config, { simulate: flags.simulate }))
      )
      const result = Exit.isSuccess(exit) && exit.value.kind === "run" ? exit.value : undefined
      if (result !== undefined) {
        if (flags.json) yield* Output.stdout(JSON.stringify(result, null, 2))
        else {
          yield* Output.stdout(
            jsonSchema === undefined ? result.text : JSON.stringify(result.structuredOutput, null, 2)
          )
          yield* Output.stderr(RunViews.runFooter(result))
          if (Option.isSome(changed)) yield* Output.stderr(RunViews.renderDiff(changed.value, { patch: false }))
        }
      }
      // Then its record lands in the store (or waits in its inbox), and the run's failure, if any, ends the command.
      if (Option.isSome(recording)) {
        const kept = Either.isRight(written)
          ? yield* RunRecording.land(recording.value, written.right)
          : ({ _tag: "Lost", reason: written.left } as const)
        const worktree = flags.worktree || best
        yield* Output.stderr(RunRecording.describeKept(kept, name, recording.value, worktree))
      }
      if (Exit.isFailure(exit)) return yield* exit
    })
).pipe(
  Command.withDescription(
    "Run one task with a single-shot agent and print the answer.\n\n" +
      "The reply goes to stdout (the structured output as JSON with --json-schema, the whole outcome as JSON\n" +
      "with --json); a cost and duration footer goes to stderr. With --ask (or --permission ask), each of\n" +
      "those tool calls is put to you on stderr first (allow it, deny it, or allow it always); that needs\n" +
      "stdin to be a terminal. As it ends, the run is recorded in the project's store, as a serve's run is\n" +
      "(`flotta runs NAME`, `flotta diff NAME`). With --detach, it runs inside the running `flotta serve`\n" +
      "instead, and its name is printed at once. Exit codes:\n" +
      describeExitCodes()
  )
)
