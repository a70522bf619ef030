/**
 * One turn of the in-memory CLI: the scripted model's replies acted out as the real CLI's frames (init, assistant
 * messages, tool calls asked through `can_use_tool`, rate limits, the result), until a result, a crash or a hang.
 */
import { Clock, Duration, Effect, Option, Predicate, Schema } from "effect"
import type { StartOptions, TurnFrame } from "../ClaudeProcess.js"
import type * as Protocol from "../ClaudeProtocol.js"
import { CONTINUATION } from "../Parking.js"
import { READ_ONLY_TOOLS } from "../Permission.js"
import type { Flags } from "./memoryFlags.js"
import type { Session } from "./memorySession.js"
import { AUTO_COMPACT_SHARE, clear, compact, tokensOf } from "./memorySession.js"
import type { Model, Reply, ToolDecision, ToolScript } from "./scriptedModel.js"
import { crash } from "./scriptedModel.js"
import { kindOf } from "./turnRecord.js"

/** Conversations by session id: what the CLI keeps in its session files, so `--resume` finds them. */
export type Sessions = Map<string, Array<string>>

/** What a turn shares with its process. */
export interface TurnContext {
  readonly start: StartOptions
  readonly flags: Flags
  readonly model: Model
  readonly costPerCall: number
  readonly sessions: Sessions
  /** This process's conversation: its session's id (a `/clear` changes it) and prompts. */
  readonly session: Session
  /** The model's context window. */
  readonly contextWindow: number
  /** The process's running cost, as the CLI reports it; the prompt a rate limit refused, which the CLI keeps. */
  readonly state: { cost: number; kept: string | undefined }
  readonly emit: (frame: TurnFrame) => Effect.Effect<void>
  /** The process dies. */
  readonly exit: (exitCode: number, stderr: string) => Effect.Effect<void>
}

const WINDOWS: Readonly<Record<string, string>> = { five_hour: "5-hour", seven_day: "weekly" }

/** The id of the model's messages in the `n`th turn of a conversation (1-based), as its session file names them. */
export const messageId = (sessionId: string, n: number) => `memory-${n}-${sessionId}`

/** How many of its conversation's prompts a message id keeps (`--resume-session-at`); undefined: not one of ours. */
export const promptsUpTo = (id: string): number | undefined => {
  const n = /^memory-([1-9][0-9]*)-/.exec(id)?.[1]
  return n === undefined ? undefined : Number(n)
}

let toolCounter = 0

/** One turn: the model's replies until a result, a crash or a hang. */
export const runTurn = Effect.fnUntraced(function*(ctx: TurnContext, text: string) {
  const { contextWindow, costPerCall, emit, exit, flags, model, session, sessions, start, state } = ctx
  return yield* Effect.gen(function*() {
    const startedAt = yield* Clock.currentTimeMillis
    const command = kindOf(text)
    if (command !== "prompt") {
      // `/compact` and `/clear` answer at once, with no model call, as the CLI's own commands.
      if (command === "compact") yield* compact(session, "manual", emit)
      else clear(session, sessions)
      yield* emit({ _tag: "Init", frame: { type: "system", subtype: "init", session_id: session.id } })
      return yield* emit({
        _tag: "Result",
        frame: {
          type: "result",
          subtype: "success",
          is_error: false,
          result: "",
          num_turns: 0,
          session_id: session.id,
          duration_ms: 0,
          total_cost_usd: state.cost,
          permission_denials: [],
          usage: { input_tokens: 0, output_tokens: 0 },
          modelUsage: { [flags.model ?? "memory"]: { costUSD: state.cost, contextWindow } }
        }
      })
    }
    // Near its window, the CLI compacts the conversation on its own before it asks the model.
    if (tokensOf([...session.prompts, text]) >= contextWindow * AUTO_COMPACT_SHARE) {
      yield* compact(session, "auto", emit)
    }
    const prompts = session.prompts
    // The prompt a usage limit left behind is merged into this message: the continuation resumes it.
    const resumed = state.kept !== undefined && text === CONTINUATION
    const prompt = resumed ? state.kept! : text
    state.kept = undefined
    const history = resumed ? prompts.slice(0, -1) : [...prompts]
    if (!resumed) prompts.push(text)
    sessions.set(session.id, prompts)
    const costAtStart = state.cost
    let calls = 0
    const denials: Array<Protocol.PermissionDenial> = []
    const result = (fields: Partial<Protocol.ResultFrame> & { readonly subtype: string }) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        emit({
          _tag: "Result",
          frame: {
            type: "result",
            is_error: false,
            num_turns: calls,
            session_id: session.id,
            duration_ms: now - startedAt,
            total_cost_usd: state.cost,
            permission_denials: denials,
            usage: { input_tokens: 10 * calls, output_tokens: 5 * calls },
            modelUsage: { [flags.model ?? "memory"]: { costUSD: state.cost, contextWindow } },
            ...fields
          }
        }))
    // The turn's number in its conversation names its messages (a resumed prompt is still the last one).
    const uuid = messageId(session.id, prompts.length)
    // Each message is sent with the whole conversation so far: how full the context is.
    const assistant = (content: Protocol.AssistantFrame["message"]["content"]) =>
      Effect.zipRight(
        // With `--include-partial-messages`, a text's words stream first, as the CLI's text deltas.
        flags.partial ? Effect.forEach(content.flatMap(textDeltas), emit, { discard: true }) : Effect.void,
        emit({
          _tag: "Assistant",
          frame: { type: "assistant", message: { content, usage: { input_tokens: tokensOf(prompts) } }, uuid }
        })
      )
    /**
     * A 429, as the CLI reports it: its own message (a usage limit's with `info`), then an API-error result. The
     * process keeps the prompt, to merge into the next user message.
     */
    const refused = (message: string, info?: Protocol.RateLimitInfo) =>
      Effect.gen(function*() {
        const limit = info === undefined
          ? {}
          : { api_error: "usage_limit_reached", api_error_params: { rate_limit_info: info } }
        yield* emit({
          _tag: "Assistant",
          frame: {
            type: "assistant",
            message: { content: [{ type: "text", text: message }] },
            error: "rate_limit",
            ...limit
          }
        })
        state.kept = prompt
        return yield* result({
          subtype: "success",
          is_error: true,
          result: message,
          api_error_status: 429,
          api_error_type: "rate_limit_error",
          ...(info === undefined ? {} : { api_error: "usage_limit_reached" })
        })
      })
    /** One model round trip; false when a bound stops the turn (its result is then sent). */
    const call = Effect.suspend(() => {
      calls++
      state.cost += costPerCall
      if (flags.maxBudgetUsd !== undefined && state.cost - costAtStart > flags.maxBudgetUsd) {
        return Effect.as(result({ subtype: "error_max_budget_usd", is_error: true, errors: ["budget"] }), false)
      }
      return Effect.succeed(true)
    })

    yield* emit({
      _tag: "Init",
      frame: { type: "system", subtype: "init", session_id: session.id, model: flags.model ?? "memory" }
    })
    let reply: Reply = yield* Effect.try(() =>
      model({
        agent: start.name,
        prompt,
        history,
        turn: prompts.length,
        sessionId: session.id,
        model: flags.model,
        cwd: start.cwd,
        resumed,
        sandbox: flags.sandbox === null
          ? null
          : { writable: [start.cwd, ...flags.sandbox.allowWrite], hosts: flags.sandbox.hosts }
      })
    ).pipe(Effect.catchAll((error) => Effect.succeed(crash({ stderr: `the model threw: ${error.error}` }))))
    while (true) {
      if (typeof reply === "string") {
        if (!(yield* call)) return
        yield* assistant([{ type: "text", text: reply }])
        return yield* result({ subtype: "success", result: reply })
      }
      switch (reply._tag) {
        case "Structured": {
          if (!(yield* call)) return
          if (!flags.jsonSchema) {
            yield* assistant([{ type: "text", text: reply.text }])
            return yield* result({ subtype: "success", result: reply.text })
          }
          const id = `toolu_memory_${++toolCounter}`
          yield* assistant([{ type: "tool_use", id, name: "StructuredOutput", input: reply.output }])
          return yield* result({ subtype: "success", result: reply.text, structured_output: reply.output })
        }
        case "ToolUse": {
          if (!(yield* call)) return
          const id = `toolu_memory_${++toolCounter}`
          if (reply.result.say !== undefined) yield* assistant([{ type: "text", text: reply.result.say }])
          yield* assistant([{ type: "tool_use", id, name: reply.tool, input: reply.input }])
          if (flags.maxTurns !== undefined && calls >= flags.maxTurns) {
            return yield* result({ subtype: "error_max_turns", is_error: true, errors: ["max turns"] })
          }
          const decision = yield* decide(flags, start, reply.tool, reply.input, id)
          if (decision.behavior === "deny") {
            denials.push({ tool_name: reply.tool, tool_use_id: id, tool_input: reply.input })
          } else if (reply.result.takes !== undefined) {
            yield* Effect.sleep(reply.result.takes)
          }
          yield* emit({ _tag: "ToolResults", frame: toolResult(id, reply.tool, reply.result, decision) })
          reply = typeof reply.then === "function" ? reply.then(decision) : reply.then
          break
        }
        case "Delay": {
          yield* Effect.sleep(reply.duration)
          reply = reply.reply
          break
        }
        case "ApiError": {
          calls++
          const message = `API Error: ${reply.status} ${reply.message}`
          yield* assistant([{ type: "text", text: message }])
          return yield* result({
            subtype: "success",
            is_error: true,
            result: message,
            api_error_status: reply.status
          })
        }
        case "UsageLimit": {
          calls++
          const now = yield* Clock.currentTimeMillis
          const resetsAt = reply.resetIn === null
            ? undefined
            : Math.ceil((now + Duration.toMillis(reply.resetIn)) / 1000)
          const info: Protocol.RateLimitInfo = {
            status: "rejected",
            ...(resetsAt === undefined ? {} : { resetsAt }),
            rateLimitType: reply.rateLimitType
          }
          const message = `You've hit your ${WINDOWS[reply.rateLimitType] ?? reply.rateLimitType} limit` +
            (resetsAt === undefined ? "" : ` · resets ${new Date(resetsAt * 1000).toISOString()}`)
          yield* emit({ _tag: "RateLimit", frame: { type: "rate_limit_event", rate_limit_info: info } })
          return yield* refused(message, info)
        }
        case "RateLimited": {
          calls++
          return yield* refused(
            reply.throttle
              ? "API Error: Server is temporarily limiting requests (not your usage limit) · Rate limited"
              : "API Error: Request rejected (429) · Rate limited"
          )
        }
        case "UsageWarning": {
          const now = yield* Clock.currentTimeMillis
          yield* emit({
            _tag: "RateLimit",
            frame: {
              type: "rate_limit_event",
              rate_limit_info: {
                status: "allowed_warning",
                resetsAt: Math.ceil((now + Duration.toMillis(reply.resetIn)) / 1000),
                rateLimitType: reply.rateLimitType,
                utilization: reply.utilization,
                surpassedThreshold: 0.9
              }
            }
          })
          reply = reply.reply
          break
        }
        case "Crash":
          return yield* exit(reply.exitCode, reply.stderr)
        case "Hang":
          return yield* Effect.never
      }
    }
  })
})

const NOT_OFFERED = "No such tool available: "

/** A text block's words (each with the space before it) as the CLI's `stream_event` text deltas. */
const textDeltas = (block: Protocol.AssistantFrame["message"]["content"][number]): Array<TurnFrame> =>
  block.type !== "text" || block.text === undefined ? [] : (block.text.match(/\s*\S+/g) ?? []).map((text) => ({
    _tag: "TextDelta",
    frame: {
      type: "stream_event",
      event: { type: "content_block_delta", delta: { type: "text_delta", text } }
    }
  }))

/** The CLI's `user` frame with a call's result: what the tool gave, or why it did not run. */
const toolResult = (
  id: string,
  tool: string,
  script: ToolScript,
  decision: ToolDecision
): Protocol.UserToolResultsFrame => {
  const block: Protocol.ToolResultBlock = decision.behavior === "deny"
    ? {
      type: "tool_result",
      tool_use_id: id,
      // The CLI's words for a tool it never offered, as it tells the model.
      content: decision.message.startsWith(NOT_OFFERED)
        ? `<tool_use_error>Error: ${decision.message}</tool_use_error>`
        : decision.message,
      is_error: true
    }
    : script.error !== undefined
    ? { type: "tool_result", tool_use_id: id, content: script.error, is_error: true }
    : { type: "tool_result", tool_use_id: id, content: script.output ?? `${tool} ok` }
  return { type: "user", message: { content: [block] } }
}

/** What a host's `can_use_tool` answer says, read as the CLI reads it. */
const Answer = Schema.Struct({
  behavior: Schema.optional(Schema.Unknown),
  updatedInput: Schema.optional(Schema.Unknown),
  message: Schema.optional(Schema.Unknown)
})
const decodeAnswer = Schema.decodeUnknownOption(Answer)

/** The host's answer to a tool call: asked through `can_use_tool` unless the flags already decide it. */
const decide = (
  flags: Flags,
  start: StartOptions,
  tool: string,
  toolInput: Record<string, unknown>,
  toolUseId: string
): Effect.Effect<ToolDecision> =>
  Effect.gen(function*() {
    if (flags.tools !== undefined && !flags.tools.includes(tool)) {
      return { behavior: "deny", message: `${NOT_OFFERED}${tool}` }
    }
    if (flags.allowedTools.includes(tool) || READ_ONLY_TOOLS.includes(tool)) {
      return { behavior: "allow", input: toolInput }
    }
    const answer = yield* start.onControlRequest({
      subtype: "can_use_tool",
      tool_name: tool,
      input: toolInput,
      tool_use_id: toolUseId
    })
    if (answer._tag === "Error") return { behavior: "deny", message: answer.error }
    const response = Option.getOrElse(decodeAnswer(answer.response), (): typeof Answer.Type => ({}))
    return response.behavior === "allow"
      ? { behavior: "allow", input: Predicate.isRecord(response.updatedInput) ? response.updatedInput : toolInput }
      : { behavior: "deny", message: Predicate.isString(response.message) ? response.message : "denied" }
  })
