/**
 * The stream-json frames the `claude` CLI writes and reads in duplex mode, and its control protocol: `decodeLine`
 * reads one stdout line into a frame (the turn's own frames are in `ClaudeFrames`, re-exported here), and the
 * writers make the host's lines. Decoding is lenient (unknown fields and unknown frame types are ignored) because
 * the CLI adds fields often; see shared/CLAUDE-CLI.md for the observed shapes.
 *
 * Usage limits (CLAUDE-CLI.md, "Usage limits"): a `rate_limit_event` carries the limiter's view
 * (`rate_limit_info`), an assistant frame the CLI writes itself carries `error: "rate_limit"`, `api_error` and
 * `api_error_params.rate_limit_info`, and the turn's `result` says `api_error_status: 429` and, for the account's
 * usage limit, `api_error: "usage_limit_reached"`.
 */
import { Option, Predicate, Schema } from "effect"
import {
  type AssistantFrame,
  type CompactBoundaryFrame,
  decodeAssistantFrame,
  decodeInitFrame,
  decodeRateLimitEventFrame,
  decodeResultFrame,
  decodeSessionFrame,
  type RateLimitEventFrame,
  type ResultFrame,
  type SessionWritesLostFrame,
  type SystemInitFrame
} from "./ClaudeFrames.js"
import {
  decodeTextDeltaFrame,
  decodeUserToolResultsFrame,
  type TextDeltaFrame,
  type UserToolResultsFrame
} from "./ClaudeToolFrames.js"

export * from "./ClaudeFrames.js"
export * from "./ClaudeToolFrames.js"

export const CanUseToolRequest = Schema.Struct({
  subtype: Schema.Literal("can_use_tool"),
  tool_name: Schema.String,
  input: Schema.optionalWith(Schema.Unknown, { default: () => ({}) }),
  tool_use_id: Schema.optional(Schema.String)
})
export type CanUseToolRequest = typeof CanUseToolRequest.Type

export const ControlRequestFrame = Schema.Struct({
  type: Schema.Literal("control_request"),
  request_id: Schema.String,
  request: Schema.Struct({ subtype: Schema.String }, { key: Schema.String, value: Schema.Unknown })
})
export type ControlRequestFrame = typeof ControlRequestFrame.Type

export const ControlResponseFrame = Schema.Struct({
  type: Schema.Literal("control_response"),
  response: Schema.Struct({
    subtype: Schema.Literal("success", "error"),
    request_id: Schema.String,
    response: Schema.optional(Schema.Unknown),
    error: Schema.optional(Schema.String)
  })
})
export type ControlResponseFrame = typeof ControlResponseFrame.Type

export const ControlCancelFrame = Schema.Struct({
  type: Schema.Literal("control_cancel_request"),
  request_id: Schema.String
})

/** A decoded stdout frame; `Other` carries frames the fleet does not interpret (stream events, status, ...). */
export type Frame =
  | { readonly _tag: "Result"; readonly frame: ResultFrame }
  | { readonly _tag: "Init"; readonly frame: SystemInitFrame }
  | { readonly _tag: "Assistant"; readonly frame: AssistantFrame }
  | { readonly _tag: "RateLimit"; readonly frame: RateLimitEventFrame }
  | { readonly _tag: "Compacted"; readonly frame: CompactBoundaryFrame }
  | { readonly _tag: "WritesLost"; readonly frame: SessionWritesLostFrame }
  | { readonly _tag: "ToolResults"; readonly frame: UserToolResultsFrame }
  | { readonly _tag: "TextDelta"; readonly frame: TextDeltaFrame }
  | { readonly _tag: "ControlRequest"; readonly frame: ControlRequestFrame }
  | { readonly _tag: "ControlResponse"; readonly frame: ControlResponseFrame }
  | { readonly _tag: "ControlCancel"; readonly requestId: string }
  | { readonly _tag: "Other"; readonly type: string }

const decodeResult = decodeResultFrame
const decodeInit = decodeInitFrame
const decodeAssistant = decodeAssistantFrame
const decodeControlRequest = Schema.decodeUnknownOption(ControlRequestFrame)
const decodeControlResponse = Schema.decodeUnknownOption(ControlResponseFrame)
const decodeControlCancel = Schema.decodeUnknownOption(ControlCancelFrame)

/**
 * Decodes one stdout line. Lines that are not protocol JSON (the CLI and its tools may print noise) give None.
 * Frames are told apart by their decoded `type`, never by a line prefix: `type` is not always the first key.
 */
export const decodeLine = (line: string): Option.Option<Frame> => {
  if (line.length === 0 || line.charCodeAt(0) !== 123 /* { */) return Option.none()
  let json: unknown
  try {
    json = JSON.parse(line)
  } catch {
    return Option.none()
  }
  if (!Predicate.isRecord(json)) return Option.none()
  const type = json["type"]
  switch (type) {
    case "result":
      return Option.map(decodeResult(json), (frame) => ({ _tag: "Result", frame }) as const)
    case "system":
      return json["subtype"] === "init"
        ? Option.map(decodeInit(json), (frame) => ({ _tag: "Init", frame }) as const)
        : Option.orElse(decodeSessionFrame(json), () => Option.some({ _tag: "Other", type: "system" } as const))
    case "assistant":
      return Option.map(decodeAssistant(json), (frame) => ({ _tag: "Assistant", frame }) as const)
    case "user":
      return Option.orElse(
        Option.map(decodeUserToolResultsFrame(json), (frame) => ({ _tag: "ToolResults", frame }) as const),
        () => Option.some({ _tag: "Other", type: "user" } as const)
      )
    case "stream_event":
      return Option.orElse(
        Option.map(decodeTextDeltaFrame(json), (frame) => ({ _tag: "TextDelta", frame }) as const),
        () => Option.some({ _tag: "Other", type: "stream_event" } as const)
      )
    case "rate_limit_event":
      return Option.map(decodeRateLimitEventFrame(json), (frame) => ({ _tag: "RateLimit", frame }) as const)
    case "control_request":
      return Option.map(decodeControlRequest(json), (frame) => ({ _tag: "ControlRequest", frame }) as const)
    case "control_response":
      return Option.map(decodeControlResponse(json), (frame) => ({ _tag: "ControlResponse", frame }) as const)
    case "control_cancel_request":
      return Option.map(
        decodeControlCancel(json),
        (frame) => ({ _tag: "ControlCancel", requestId: frame.request_id }) as const
      )
    default:
      return typeof type === "string" ? Option.some({ _tag: "Other", type }) : Option.none()
  }
}

export const decodeCanUseTool = Schema.decodeUnknownOption(CanUseToolRequest)

/** The SDK's exact user frame shape. */
export const userFrame = (text: string): string =>
  JSON.stringify({
    type: "user",
    session_id: "",
    message: { role: "user", content: [{ type: "text", text }] },
    parent_tool_use_id: null
  })

export const controlRequest = (requestId: string, request: Record<string, unknown>): string =>
  JSON.stringify({ type: "control_request", request_id: requestId, request })

export const controlSuccess = (requestId: string, response: unknown): string =>
  JSON.stringify({ type: "control_response", response: { subtype: "success", request_id: requestId, response } })

export const controlError = (requestId: string, error: string): string =>
  JSON.stringify({ type: "control_response", response: { subtype: "error", request_id: requestId, error } })

/** The text of the reply: the `result` field, or the error list of an error subtype. */
export const resultText = (frame: ResultFrame): string =>
  frame.result ?? (frame.errors ?? []).map((e) => (typeof e === "string" ? e : JSON.stringify(e))).join("\n")
