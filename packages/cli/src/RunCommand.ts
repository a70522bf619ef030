/**
 * `flotta run "prompt"`: one task in, the answer on stdout (the structured output as JSON when a schema is
 * given), a cost and duration footer on stderr, and an exit code that says how it ended.
 */
import { Args, Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Flotta } from "@flotta/core/Flotta"
import type { Permission } from "@flotta/core/Permission"
import type { RunOptions, RunResult } from "@flotta/core/Run"
import { Duration, Effect, Option } from "effect"
import * as path from "node:path"
import * as Engine from "./Engine.js"
import { describeExitCodes } from "./ExitCode.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"
import * as Spinner from "./Spinner.js"

const options = {
  cwd: Options.directory("cwd").pipe(
    Options.withDescription("Working directory (default: the current one)"),
    Options.optional
  ),
  model: Options.text("model").pipe(Options.withDescription("Model alias or id, e.g. sonnet"), Options.optional),
  name: Options.text("name").pipe(Options.withDescription("The run's name (and its worktree's)"), Options.optional),
  permission: Options.choice("permission", ["read_only", "full"]).pipe(
    Options.withDescription("read_only (Read, Glob, Grep) or full; --allow lists tools instead"),
    Options.optional
  ),
  allow: Options.text("allow").pipe(
    Options.withDescription("Allow exactly these tools (repeat, or comma-separated): --allow Read,Edit"),
    Options.repeated
  ),
  worktree: Options.boolean("worktree").pipe(
    Options.withDescription("Run in its own git worktree: <repo>/.claude/worktrees/<name>")
  ),
  cleanup: Options.boolean("cleanup").pipe(
    Options.withDescription("After success, commit what the run left and remove its worktree (the branch stays)")
  ),
  systemPrompt: Options.text("system-prompt").pipe(
    Options.withDescription("Replace the system prompt"),
    Options.optional
  ),
  appendSystemPrompt: Options.text("append-system-prompt").pipe(
    Options.withDescription("Add to the system prompt"),
    Options.optional
  ),
  jsonSchema: Options.text("json-schema").pipe(
    Options.withDescription("A JSON Schema (inline, or a path to a .json file): print the structured output"),
    Options.optional
  ),
  maxTurns: Options.integer("max-turns").pipe(
    Options.withDescription("Stop after this many model calls"),
    Options.optional
  ),
  maxBudgetUsd: Options.float("max-budget-usd").pipe(
    Options.withDescription("Stop past this cost in USD"),
    Options.optional
  ),
  timeout: Options.text("timeout").pipe(
    Options.withDescription("Interrupt the run after this long: 90, 90s, 5m, 1h (default 180s)"),
    Options.optional
  ),
  simulate: Shared.simulate,
  config: Shared.config
}

/** `90` (seconds), `90s`, `500ms`, `5m`, `1h`. */
export const parseTimeout = (text: string): Option.Option<Duration.Duration> => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text)
  if (match === null) return Option.none()
  const value = Number(match[1])
  const unit = match[2] ?? "s"
  const millis = unit === "ms" ? value : unit === "s" ? value * 1000 : unit === "m" ? value * 60_000 : value * 3_600_000
  return millis > 0 ? Option.some(Duration.millis(millis)) : Option.none()
}

const invalid = (field: string, reason: string) => Shared.invalid(field, reason)

const readSchema = (text: string, cwd: string) =>
  Effect.gen(function*() {
    const trimmed = text.trim()
    let source = trimmed
    if (!trimmed.startsWith("{")) {
      const fs = yield* FileSystem.FileSystem
      source = yield* fs.readFileString(path.resolve(cwd, trimmed)).pipe(
        Effect.mapError(() => invalid("--json-schema", `not inline JSON and no file at ${trimmed}`))
      )
    }
    const parsed = yield* Effect.try({
      try: () => JSON.parse(source) as unknown,
      catch: (e) => invalid("--json-schema", `not valid JSON: ${(e as Error).message}`)
    })
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return yield* invalid("--json-schema", "a JSON Schema must be an object")
    }
    return parsed as Record<string, unknown>
  })

const permissionOf = (permission: Option.Option<"read_only" | "full">, allow: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const tools = allow.flatMap((a) => a.split(",")).map((t) => t.trim()).filter((t) => t.length > 0)
    if (tools.length > 0 && Option.isSome(permission)) {
      return yield* invalid("--allow", "give either --permission or --allow, not both")
    }
    if (tools.length > 0) return { allow: tools } as Permission
    return Option.getOrElse(permission, () => "read_only" as const) as Permission
  })

const footer = (result: RunResult) => {
  const parts = [
    `$${result.costUsd.toFixed(4)}`,
    `${(result.durationMs / 1000).toFixed(1)}s`,
    `${result.modelCalls} model call${result.modelCalls === 1 ? "" : "s"}`,
    `session ${result.sessionId}`
  ]
  if (result.worktree !== undefined) {
    parts.push(result.worktree.removed ? `branch ${result.worktree.branch}` : `worktree ${result.worktree.path}`)
  }
  return `— ${parts.join(" · ")}`
}

export const command = Command.make(
  "run",
  {
    ...options,
    prompt: Args.text({ name: "prompt" }).pipe(Args.withDescription("The task: what the agent should do"))
  },
  (flags) =>
    Effect.gen(function*() {
      const cwd = path.resolve(Option.getOrElse(flags.cwd, () => "."))
      const config = yield* Shared.loadConfig(flags.config)
      const permission = yield* permissionOf(flags.permission, flags.allow)
      const jsonSchema = Option.isSome(flags.jsonSchema) ? yield* readSchema(flags.jsonSchema.value, cwd) : undefined
      const timeout = Option.isSome(flags.timeout)
        ? yield* Option.match(parseTimeout(flags.timeout.value), {
          onNone: () =>
            invalid(
              "--timeout",
              `expected a duration such as 90, 90s, 5m or 1h, got ${flags.timeout.pipe(Option.getOrElse(() => ""))}`
            ),
          onSome: Effect.succeed
        })
        : undefined
      if (flags.cleanup && !flags.worktree) {
        return yield* invalid("--cleanup", "cleanup removes a run's worktree: add --worktree")
      }
      if (flags.prompt.trim().length === 0) {
        return yield* invalid("prompt", "the prompt is empty")
      }

      const spinner = yield* Spinner.start("flotta run")
      const runOptions: RunOptions = {
        prompt: flags.prompt,
        cwd,
        permission,
        onActivity: spinner.onActivity,
        ...(flags.worktree ? { worktree: true } : {}),
        ...(flags.cleanup ? { cleanup: true } : {}),
        ...Option.match(flags.model, { onNone: () => ({}), onSome: (model) => ({ model }) }),
        ...Option.match(flags.name, { onNone: () => ({}), onSome: (name) => ({ name }) }),
        ...Option.match(flags.systemPrompt, { onNone: () => ({}), onSome: (systemPrompt) => ({ systemPrompt }) }),
        ...Option.match(flags.appendSystemPrompt, {
          onNone: () => ({}),
          onSome: (appendSystemPrompt) => ({ appendSystemPrompt })
        }),
        ...(jsonSchema === undefined ? {} : { jsonSchema }),
        ...Option.match(flags.maxTurns, { onNone: () => ({}), onSome: (maxTurns) => ({ maxTurns }) }),
        ...Option.match(flags.maxBudgetUsd, { onNone: () => ({}), onSome: (maxBudgetUsd) => ({ maxBudgetUsd }) }),
        ...(timeout === undefined ? {} : { timeout })
      }
      const result = yield* Effect.flatMap(Flotta, (fleet) => fleet.run(runOptions)).pipe(
        Effect.ensuring(spinner.stop),
        Effect.provide(Engine.layer(config, { simulate: flags.simulate }))
      )
      yield* Output.stdout(
        jsonSchema === undefined ? result.text : JSON.stringify(result.structuredOutput, null, 2)
      )
      yield* Output.stderr(footer(result))
    })
).pipe(
  Command.withDescription(
    "Run one task with a single-shot agent and print the answer.\n\n" +
      "The reply goes to stdout (the structured output as JSON with --json-schema); a cost and duration\n" +
      "footer goes to stderr. Exit codes:\n" + describeExitCodes()
  )
)
