import type { AccessControl } from './contract.js';

/** Scopes `container:<action>` on the container named by the input's `containerId`. */
export function containerAccess(action: string): AccessControl {
  return { requiredScopes: [`container:${action}`], resourceType: 'container', resourceAction: action, resourceIdPath: 'containerId' };
}
