import * as undici from 'undici';
export * from 'undici';

export function request(url, options = {}) {
	const token = process.env.SBX_MCP_TOKEN;
	const headers = { ...(options.headers || {}) };
	if (token && !Object.keys(headers).some((k) => k.toLowerCase() === 'authorization'))
		headers.authorization = `Bearer ${token}`;
	return undici.request(url, { ...options, headers });
}
