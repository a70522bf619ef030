/**
 * @flotta/webhooks: notifications out (chosen report-log events POSTed to webhooks, signed, at least once and in
 * order through the store) and triggers in (`POST /hooks/routines/NAME`, `POST /hooks/github`), as one Layer the
 * cli composes when the config asks for them.
 */
export * as Delivery from "./Delivery.js"
export * as GitHub from "./GitHub.js"
export * as Notifier from "./Notifier.js"
export * as Triggers from "./Triggers.js"
export * as Webhooks from "./Webhooks.js"
export * as WebhooksConfig from "./WebhooksConfig.js"
