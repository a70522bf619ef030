/**
 * Why a fleet over several hosts could not answer: the host running an agent died under a call, or no live host
 * can take it. Every implementation of `Flotta` may fail with them; `Errors` re-exports them.
 */
import { Schema } from "effect"

/** A turn in flight on a host that died (its lease lapsed): the agent comes back elsewhere, the turn does not. */
export class HostLost extends Schema.TaggedError<HostLost>()("HostLost", {
  name: Schema.String,
  host: Schema.String
}) {
  override get message() {
    return `host ${this.host} was lost while it ran this turn of ${this.name}; the agent moves to a live host, ` +
      `ask again`
  }
}

/** No live host can take the agent: the one asked for is not live, or none is. */
export class HostUnavailable extends Schema.TaggedError<HostUnavailable>()("HostUnavailable", {
  host: Schema.String,
  live: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no live host named ${JSON.stringify(this.host)} in the cluster (live: ${this.live.join(", ") || "none"})`
  }
}
