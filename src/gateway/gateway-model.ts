import type { Api, Model } from "@mariozechner/pi-ai";
import type { TappedApi } from "./usage-tap.ts";

/** The wire APIs the gateway carries: the ones whose usage it can read, so every call is metered. */
export type CarriedApi = TappedApi;

/** A model the gateway can carry: pi-ai's `Model` on one of the carried APIs. */
export type GatewayModel = Model<Api> & { api: CarriedApi };
