/**
 * The stream-json frames the `claude` CLI writes and reads in duplex mode, and its control protocol.
 * Decoding is lenient (unknown fields and unknown frame types are ignored) because the CLI adds fields often;
 * see shared/CLAUDE-CLI.md for the observed shapes.
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
  terminal_reason: OptionalNullable(Schema.String),
  structured_output: Schema.optional(Schema.Unknown)
})
export type ResultFrame = typeof ResultFrame.Type

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

export const AssistantFrame = Schema.Struct({
  type: Schema.Literal("assistant"),
  message: Schema.Struct({ content: Schema.Array(ContentBlock) })
})
export type AssistantFrame = typeof AssistantFrame.Type

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
  | { readonly _tag: "ControlRequest"; readonly frame: ControlRequestFrame }
  | { readonly _tag: "ControlResponse"; readonly frame: ControlResponseFrame }
  | { readonly _tag: "ControlCancel"; readonly requestId: string }
  | { readonly _tag: "Other"; readonly type: string }

const decodeResult = Schema.decodeUnknownOption(ResultFrame)
const decodeInit = Schema.decodeUnknownOption(SystemInitFrame)
const decodeAssistant = Schema.decodeUnknownOption(AssistantFrame)
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
  if (typeof json !== "object" || json === null) return Option.none()
  const type = (json as { readonly type?: unknown }).type
  switch (type) {
    case "result":
      return Option.map(decodeResult(json), (frame) => ({ _tag: "Result", frame }) as const)
    case "system":
      return (json as { readonly subtype?: unknown }).subtype === "init"
        ? Option.map(decodeInit(json), (frame) => ({ _tag: "Init", frame }) as const)
        : Option.some({ _tag: "Other", type: "system" })
    case "assistant":
      return Option.map(decodeAssistant(json), (frame) => ({ _tag: "Assistant", frame }) as const)
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
