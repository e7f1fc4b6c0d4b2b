// Module resolution hooks (see register.mjs): the suite's own imports of
// fs and undici get the shims beside this file; the shims' imports, and
// everything else, resolve as usual.
const shims = { fs: './fs-shim.mjs', 'node:fs': './fs-shim.mjs', undici: './undici-shim.mjs' };

export async function resolve(specifier, context, next) {
	if (shims[specifier] && context.parentURL && context.parentURL.includes('/@modelcontextprotocol/conformance/'))
		return { url: new URL(shims[specifier], import.meta.url).href, shortCircuit: true };
	return next(specifier, context);
}
