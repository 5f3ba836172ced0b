// The platform's services, keyed by the property a ComputeClient exposes them under.
// Adding a service to the SDK is one line here: the client type and constructor follow from it.

import { CertificateService } from "./gen/bettercompute/compute/v1/certificates_pb.js";
import { EventService } from "./gen/bettercompute/compute/v1/events_pb.js";
import { InstanceService } from "./gen/bettercompute/compute/v1/instances_pb.js";
import { LoadBalancerService } from "./gen/bettercompute/compute/v1/load_balancers_pb.js";
import { MetalService } from "./gen/bettercompute/compute/v1/metal_pb.js";
import { NetworkService } from "./gen/bettercompute/compute/v1/networks_pb.js";
import { PoolService, ProviderAccountService } from "./gen/bettercompute/compute/v1/pools_pb.js";
import { ProjectService, TenantService } from "./gen/bettercompute/compute/v1/tenancy_pb.js";
import { SubstrateService } from "./gen/bettercompute/compute/v1/substrates_pb.js";
import { UsageService } from "./gen/bettercompute/compute/v1/usage_pb.js";

/** services maps each ComputeClient property to the service it calls. */
export const services = {
  loadBalancers: LoadBalancerService,
  tenants: TenantService,
  projects: ProjectService,
  providerAccounts: ProviderAccountService,
  pools: PoolService,
  networks: NetworkService,
  certificates: CertificateService,
  instances: InstanceService,
  events: EventService,
  usage: UsageService,
  metal: MetalService,
  substrates: SubstrateService,
} as const;

/** ServiceName is a property of ComputeClient. */
export type ServiceName = keyof typeof services;
