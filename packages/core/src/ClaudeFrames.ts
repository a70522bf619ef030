/**
 * The frames of every turn the `claude` CLI writes in stream-json mode, as Schemas, and their hand decoders:
 * `system/init`, `assistant`, `result` and `rate_limit_event`, and the session's own system frames
 * (`compact_boundary`, `session_writes_lost`). The turn frames are large (the real CLI's result has 27 keys, its
 * init 2.7 kB) and are decoded on the hot path by hand, reading only the fields the Schemas declare, with the same
 * defaults; a test holds the decoders to the Schemas on the real CLI's captured frames. `ClaudeProtocol` reads a
 * line into one of these (and the control protocol's), and re-exports them.
 */
import { Option, Schema } from "effect"

const OptionalNullable = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

export const Usage = Schema.Record({ key: Schema.String, value: Schema.Unknown })
export type Usage = typeof Usage.Type

export const PermissionDenial = Schema.Struct({
  tool_name: Schema.String,
  tool_use_id: Schema.optional(Schema.String),
  tool_input: Schema.optional(Schema.Unknown)
})
export type PermissionDenial = typeof PermissionDenial.Type

export const ResultFrame = Schema.Struct({
  type: Schema.Literal("result"),
  subtype: Schema.String,
  is_error: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  result: OptionalNullable(Schema.String),
  errors: Schema.optional(Schema.Array(Schema.Unknown)),
  num_turns: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  session_id: Schema.optionalWith(Schema.String, { default: () => "" }),
  duration_ms: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  total_cost_usd: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  usage: Schema.optional(Usage),
  permission_denials: Schema.optionalWith(Schema.Array(PermissionDenial), { default: () => [] }),
  api_error_status: OptionalNullable(Schema.Number),
  /** `usage_limit_reached` when the account's usage limit refused the request (subscription logins). */
  api_error: OptionalNullable(Schema.String),
  /** The API's error type: `rate_limit_error` for any 429, `overloaded_error` for a 529, ... */
  api_error_type: OptionalNullable(Schema.String),
  terminal_reason: OptionalNullable(Schema.String),
  structured_output: Schema.optional(Schema.Unknown),
  /** Per model, over the process's turns: what each cost, and its context window. */
  modelUsage: Schema.optional(Schema.Record({
    key: Schema.String,
    value: Schema.Struct({ costUSD: Schema.optional(Schema.Number), contextWindow: Schema.optional(Schema.Number) })
  }))
})
export type ResultFrame = typeof ResultFrame.Type

/** The conversation was compacted (by `/compact`, or by the CLI itself near its window): before and after. */
export const CompactBoundaryFrame = Schema.Struct({
  type: Schema.Literal("system"),
  subtype: Schema.Literal("compact_boundary"),
  compact_metadata: Schema.Struct({
    /** `manual` (`/compact`) or `auto`. */
    trigger: Schema.String,
    pre_tokens: Schema.Number,
    post_tokens: Schema.optional(Schema.Number)
  })
})
export type CompactBoundaryFrame = typeof CompactBoundaryFrame.Type

/**
 * The CLI could not write its session file (a full disk, a quota): written as it exits. What it lost cannot be
 * resumed.
 */
export const SessionWritesLostFrame = Schema.Struct({
  type: Schema.Literal("system"),
  subtype: Schema.Literal("session_writes_lost"),
  /** `ENOSPC` (the disk was full) or `EDQUOT` (the quota was used up); more may come. */
  error_code: Schema.String,
  /** `transcript`, `global_config`. */
  lost: Schema.Array(Schema.String),
  transcript_session_ids: Schema.optional(Schema.Array(Schema.String))
})
export type SessionWritesLostFrame = typeof SessionWritesLostFrame.Type

export const SystemInitFrame = Schema.Struct({
  type: Schema.Literal("system"),
  subtype: Schema.Literal("init"),
  session_id: Schema.String,
  model: Schema.optional(Schema.String),
  cwd: Schema.optional(Schema.String),
  tools: Schema.optional(Schema.Array(Schema.String))
})
export type SystemInitFrame = typeof SystemInitFrame.Type

export const ContentBlock = Schema.Struct({
  type: Schema.String,
  text: Schema.optional(Schema.String),
  id: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  input: Schema.optional(Schema.Unknown)
})

/** The usage limiter's view, as the CLI reads it from the `anthropic-ratelimit-unified-*` response headers. */
export const RateLimitInfo = Schema.Struct({
  /** `allowed`, `allowed_warning` (past a warning threshold) or `rejected`. */
  status: Schema.String,
  /** When the window resets, in epoch seconds. */
  resetsAt: Schema.optional(Schema.Number),
  /** `five_hour`, `seven_day`, ...; absent on a throttle (a 429 that is not the usage limit). */
  rateLimitType: Schema.optional(Schema.String),
  utilization: Schema.optional(Schema.Number),
  surpassedThreshold: Schema.optional(Schema.Number)
})
export type RateLimitInfo = typeof RateLimitInfo.Type

export const RateLimitEventFrame = Schema.Struct({
  type: Schema.Literal("rate_limit_event"),
  rate_limit_info: RateLimitInfo
})
export type RateLimitEventFrame = typeof RateLimitEventFrame.Type

/** What one API message was sent with: how full the context was when it was asked. */
export const MessageUsage = Schema.Struct({
  input_tokens: Schema.optional(Schema.Number),
  cache_creation_input_tokens: Schema.optional(Schema.Number),
  cache_read_input_tokens: Schema.optional(Schema.Number)
})
export type MessageUsage = typeof MessageUsage.Type

export const AssistantFrame = Schema.Struct({
  type: Schema.Literal("assistant"),
  message: Schema.Struct({ content: Schema.Array(ContentBlock), usage: Schema.optional(MessageUsage) }),
  /** The message's id in the CLI's session file: where `--resume-session-at` cuts a fork. */
  uuid: Schema.optional(Schema.String),
  /** Set on a message the CLI writes itself for an API error: `rate_limit`, ... */
  error: Schema.optional(Schema.String),
  api_error: Schema.optional(Schema.String),
  api_error_params: Schema.optional(Schema.Struct({ rate_limit_info: Schema.optional(RateLimitInfo) }))
})
export type AssistantFrame = typeof AssistantFrame.Type

type Json = Record<string, unknown>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)
const numberOr = (u: unknown, fallback: number) => (typeof u === "number" ? u : fallback)
/** An optional, nullable field: absent stays absent, anything but the expected type fails the frame. */
const optionalNullable = <A>(u: unknown, is: (u: unknown) => u is A): A | null | undefined | false =>
  u === undefined || u === null ? u : is(u) ? u : false
const isString = (u: unknown): u is string => typeof u === "string"
const isNumber = (u: unknown): u is number => typeof u === "number"

const decodeDenial = (u: unknown): PermissionDenial | undefined => {
  if (!isRecord(u) || !isString(u["tool_name"])) return undefined
  const id = u["tool_use_id"]
  if (id !== undefined && !isString(id)) return undefined
  return {
    tool_name: u["tool_name"],
    ...(id === undefined ? {} : { tool_use_id: id }),
    ...("tool_input" in u ? { tool_input: u["tool_input"] } : {})
  }
}

/** `ResultFrame`, by hand (see the note at the top). */
export const decodeResultFrame = (json: Json): Option.Option<ResultFrame> => {
  const { errors, result, subtype, usage } = json
  if (!isString(subtype)) return Option.none()
  const text = optionalNullable(result, isString)
  const apiStatus = optionalNullable(json["api_error_status"], isNumber)
  const apiError = optionalNullable(json["api_error"], isString)
  const apiErrorType = optionalNullable(json["api_error_type"], isString)
  const terminal = optionalNullable(json["terminal_reason"], isString)
  if (text === false || apiStatus === false || terminal === false || apiError === false || apiErrorType === false) {
    return Option.none()
  }
  if ((errors !== undefined && !Array.isArray(errors)) || (usage !== undefined && !isRecord(usage))) {
    return Option.none()
  }
  const rawDenials = json["permission_denials"]
  let denials: Array<PermissionDenial> = []
  if (rawDenials !== undefined) {
    if (!Array.isArray(rawDenials)) return Option.none()
    denials = rawDenials.map(decodeDenial).filter((d): d is PermissionDenial => d !== undefined)
    if (denials.length !== rawDenials.length) return Option.none()
  }
  const isError = json["is_error"]
  const sessionId = json["session_id"]
  if ((isError !== undefined && typeof isError !== "boolean") || (sessionId !== undefined && !isString(sessionId))) {
    return Option.none()
  }
  const frame: { -readonly [K in keyof ResultFrame]: ResultFrame[K] } = {
    type: "result",
    subtype,
    is_error: isError === true,
    num_turns: numberOr(json["num_turns"], 0),
    session_id: sessionId ?? "",
    duration_ms: numberOr(json["duration_ms"], 0),
    total_cost_usd: numberOr(json["total_cost_usd"], 0),
    permission_denials: denials
  }
  if (text !== undefined) frame.result = text
  if (errors !== undefined) frame.errors = errors
  if (usage !== undefined) frame.usage = usage
  if (apiStatus !== undefined) frame.api_error_status = apiStatus
  if (apiError !== undefined) frame.api_error = apiError
  if (apiErrorType !== undefined) frame.api_error_type = apiErrorType
  if (terminal !== undefined) frame.terminal_reason = terminal
  if ("structured_output" in json) frame.structured_output = json["structured_output"]
  const models = json["modelUsage"]
  if (isRecord(models)) {
    const kept: Record<string, { costUSD?: number; contextWindow?: number }> = {}
    for (const [model, use] of Object.entries(models)) {
      if (!isRecord(use)) continue
      const { contextWindow, costUSD } = use
      kept[model] = {
        ...(isNumber(costUSD) ? { costUSD } : {}),
        ...(isNumber(contextWindow) ? { contextWindow } : {})
      }
    }
    frame.modelUsage = kept
  }
  return Option.some(frame)
}

/** `SystemInitFrame`, by hand. */
export const decodeInitFrame = (json: Json): Option.Option<SystemInitFrame> => {
  const { cwd, model, tools } = json
  const sessionId = json["session_id"]
  if (!isString(sessionId)) return Option.none()
  if ((model !== undefined && !isString(model)) || (cwd !== undefined && !isString(cwd))) return Option.none()
  if (tools !== undefined && !(Array.isArray(tools) && tools.every(isString))) return Option.none()
  return Option.some({
    type: "system",
    subtype: "init",
    session_id: sessionId,
    ...(model === undefined ? {} : { model }),
    ...(cwd === undefined ? {} : { cwd }),
    ...(tools === undefined ? {} : { tools })
  })
}

type Block = AssistantFrame["message"]["content"][number]

const decodeBlock = (u: unknown): Block | undefined => {
  if (!isRecord(u) || !isString(u["type"])) return undefined
  const { id, name, text } = u
  if ((text !== undefined && !isString(text)) || (id !== undefined && !isString(id))) return undefined
  if (name !== undefined && !isString(name)) return undefined
  return {
    type: u["type"],
    ...(text === undefined ? {} : { text }),
    ...(id === undefined ? {} : { id }),
    ...(name === undefined ? {} : { name }),
    ...("input" in u ? { input: u["input"] } : {})
  }
}

/** `RateLimitInfo`, by hand; `undefined` when it does not match. */
const decodeRateLimitInfo = (u: unknown): RateLimitInfo | undefined => {
  if (!isRecord(u) || !isString(u["status"])) return undefined
  const { rateLimitType, resetsAt, surpassedThreshold, utilization } = u
  if ((resetsAt !== undefined && !isNumber(resetsAt)) || (utilization !== undefined && !isNumber(utilization))) {
    return undefined
  }
  if (
    (rateLimitType !== undefined && !isString(rateLimitType)) ||
    (surpassedThreshold !== undefined && !isNumber(surpassedThreshold))
  ) return undefined
  return {
    status: u["status"],
    ...(resetsAt === undefined ? {} : { resetsAt }),
    ...(rateLimitType === undefined ? {} : { rateLimitType }),
    ...(utilization === undefined ? {} : { utilization }),
    ...(surpassedThreshold === undefined ? {} : { surpassedThreshold })
  }
}

/** An API error's fields on an assistant frame (rare: only the CLI's own error messages have them). */
const decodeApiErrorFields = (json: Json, frame: { -readonly [K in keyof AssistantFrame]: AssistantFrame[K] }) => {
  const { api_error: apiError, api_error_params: params, error } = json
  if ((error !== undefined && !isString(error)) || (apiError !== undefined && !isString(apiError))) return false
  if (error !== undefined) frame.error = error
  if (apiError !== undefined) frame.api_error = apiError
  if (params === undefined) return true
  if (!isRecord(params)) return false
  const raw = params["rate_limit_info"]
  if (raw === undefined) {
    frame.api_error_params = {}
    return true
  }
  const info = decodeRateLimitInfo(raw)
  if (info === undefined) return false
  frame.api_error_params = { rate_limit_info: info }
  return true
}

const USAGE_KEYS = ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"] as const

/** A message's usage: the token counts it says (the rest of it, and anything but a number, left out). */
const decodeMessageUsage = (u: unknown): MessageUsage | undefined => {
  if (!isRecord(u)) return undefined
  const usage: { -readonly [K in keyof MessageUsage]: MessageUsage[K] } = {}
  for (const key of USAGE_KEYS) if (isNumber(u[key])) usage[key] = u[key]
  return usage
}

/** `AssistantFrame`, by hand. */
export const decodeAssistantFrame = (json: Json): Option.Option<AssistantFrame> => {
  const message = json["message"]
  if (!isRecord(message) || !Array.isArray(message["content"])) return Option.none()
  const content: Array<Block> = []
  for (const raw of message["content"]) {
    const block = decodeBlock(raw)
    if (block === undefined) return Option.none()
    content.push(block)
  }
  const usage = decodeMessageUsage(message["usage"])
  const frame: { -readonly [K in keyof AssistantFrame]: AssistantFrame[K] } = {
    type: "assistant",
    message: usage === undefined ? { content } : { content, usage }
  }
  const uuid = json["uuid"]
  if (uuid !== undefined) {
    if (!isString(uuid)) return Option.none()
    frame.uuid = uuid
  }
  if (
    (json["error"] !== undefined || json["api_error"] !== undefined || json["api_error_params"] !== undefined) &&
    !decodeApiErrorFields(json, frame)
  ) return Option.none()
  return Option.some(frame)
}

/** `RateLimitEventFrame` (rare, so not on the hot path, but by hand like its neighbours). */
export const decodeRateLimitEventFrame = (json: Json): Option.Option<RateLimitEventFrame> => {
  const info = decodeRateLimitInfo(json["rate_limit_info"])
  return info === undefined ? Option.none() : Option.some({ type: "rate_limit_event", rate_limit_info: info })
}

const decodeCompactBoundary = Schema.decodeUnknownOption(CompactBoundaryFrame)
const decodeSessionWritesLost = Schema.decodeUnknownOption(SessionWritesLostFrame)

/** A `system` frame of the session's own (rare, so by Schema): a compaction, or writes that were lost. */
export const decodeSessionFrame = (
  json: Json
): Option.Option<
  | { readonly _tag: "Compacted"; readonly frame: CompactBoundaryFrame }
  | { readonly _tag: "WritesLost"; readonly frame: SessionWritesLostFrame }
> => {
  switch (json["subtype"]) {
    case "compact_boundary":
      return Option.map(decodeCompactBoundary(json), (frame) => ({ _tag: "Compacted", frame }) as const)
    case "session_writes_lost":
      return Option.map(decodeSessionWritesLost(json), (frame) => ({ _tag: "WritesLost", frame }) as const)
    default:
      return Option.none()
  }
}
