// Loaded with `node --import` into a `callwire serve`: resolves the optional native
// HTTP/3 package of @fails-components/webtransport to ./quiche.mjs. The native package
// downloads its binary from outside the npm registry, so it cannot be installed here;
// this stands in for it so that a test can see what the server does when it is present.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
