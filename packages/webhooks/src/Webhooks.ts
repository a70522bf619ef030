/**
 * The webhooks as a Layer, composed when the config has a `notify` or `github` section or routines: the
 * notifications (`Notifier`, one follower per target), and the trigger routes and the dashboard's webhooks panel
 * (`Panel`), contributed through `Http.Contributions` (so it must sit below the MCP server and the dashboard, and
 * above the scheduler, which it reaches as an optional service).
 */
import type { StoreUnavailable } from "@flotta/core/Errors"
import { Flotta } from "@flotta/core/Flotta"
import * as Http from "@flotta/core/Http"
import { ReportLog } from "@flotta/core/ReportLog"
import { Store } from "@flotta/core/Store"
import { Scheduler } from "@flotta/scheduler/Scheduler"
import { Context, Effect, Layer, Option } from "effect"
import * as Deliveries from "./internal/deliveries.js"
import * as Notifier from "./Notifier.js"
import * as Panel from "./Panel.js"
import * as Triggers from "./Triggers.js"
import type { WebhooksInput } from "./WebhooksConfig.js"
import { targetOf, WebhooksConfigError } from "./WebhooksConfig.js"
import * as Events from "./WebhooksEvents.js"

/** The notifier and the trigger routes for the sections given; nothing at all without them. */
export function layer(
  input: WebhooksInput,
  options?: Notifier.NotifierOptions
): Layer.Layer<
  Notifier.Notifier,
  WebhooksConfigError | StoreUnavailable,
  Flotta | ReportLog | Store | Http.Contributions
>
export function layer(
  input: WebhooksInput | undefined,
  options?: Notifier.NotifierOptions
): Layer.Layer<never, WebhooksConfigError | StoreUnavailable, Flotta | ReportLog | Store | Http.Contributions>
export function layer(input: WebhooksInput | undefined, options: Notifier.NotifierOptions = {}) {
  return input === undefined ? Layer.empty : Layer.scopedContext(make(input, options))
}

const make = (input: WebhooksInput, options: Notifier.NotifierOptions) =>
  Effect.gen(function*() {
    const targets = (input.notify ?? []).map((target) => targetOf(target, input.dashboardUrl))
    const twice = targets.find((t, i) => targets.findIndex((u) => u.url === t.url) !== i)
    if (twice !== undefined) {
      return yield* new WebhooksConfigError({ reason: `notify: ${twice.shown} is listed twice` })
    }
    const notifier = yield* Notifier.make(targets, options)
    const fleet = yield* Flotta
    const log = yield* ReportLog
    const store = yield* Store
    const deliveries = yield* Deliveries.make(
      store,
      (id) =>
        Effect.asVoid(log.post("hooks", Events.trigger, { source: "github", delivery: id, duplicate: true, fired: [] }))
    )
    const mount = Triggers.routes({
      fleet,
      log,
      scheduler: yield* Effect.serviceOption(Scheduler),
      github: Option.fromNullable(input.github),
      deliveries
    })
    const seam = yield* Http.Contributions
    yield* seam.add({ name: "webhooks", routes: mount, panels: [Panel.panel(fleet, Option.some(notifier))] })
    return Context.make(Notifier.Notifier, notifier)
  })
