// Loaded with `node --import` before the conformance suite, which knows
// nothing of bearer tokens and needs Node.js 22: every request it makes
// (fetch, and undici's request in dns-rebinding-protection) carries
// Authorization: Bearer $SBX_MCP_TOKEN, and its one import Node.js 20
// lacks (fs.globSync, on a path the server scenarios never take) is
// given a stub that says so.  Nothing else of the suite changes.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);

const token = process.env.SBX_MCP_TOKEN;
if (token) {
	const fetch = globalThis.fetch;
	globalThis.fetch = (input, init = {}) => {
		const headers = new Headers(init.headers || (input instanceof Request ? input.headers : undefined));
		if (!headers.has('authorization'))
			headers.set('authorization', `Bearer ${token}`);
		return fetch(input, { ...init, headers });
	};
}
