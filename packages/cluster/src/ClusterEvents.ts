/** The cluster's own report kinds, with the Schemas of their data (`host_lost` is the engine's: others tell it). */
import * as ReportEvent from "@flotta/core/ReportEvent"
import { Schema } from "effect"

export const moved = ReportEvent.kind(
  "moved",
  Schema.Struct({
    from: Schema.String.annotations({ description: "the host it ran on" }),
    to: Schema.String.annotations({ description: "the host it runs on now" }),
    sessionId: Schema.String,
    resumed: Schema.Boolean.annotations({ description: "its conversation was resumed (else it starts a new one)" })
  }),
  "an agent of a lost host started on another",
  { summary: (d) => `from ${d.from} to ${d.to}${d.resumed ? ", resumed" : ""}` }
)

/** The cluster's kinds. */
export const kinds = [moved] as const
