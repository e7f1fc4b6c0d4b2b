/* http: which of libmicrohttpd's messages the server keeps out of its log. */
#include <stdbool.h>

#include "http.h"
#include "tap.h"

int main(void)
{
	OK(http_log_is_client_gone("Failed to send the footers for the request for `/mcp'. Error: Broken pipe"),
	   "footers to a client that closed its stream: not logged");
	OK(http_log_is_client_gone("Failed to send the chunked response body for the request for `/mcp'. Error: Connection reset by peer"),
	   "a chunk to a reset connection: not logged");
	OK(http_log_is_client_gone("Failed to send data in request for /mcp. Error: The connection was forcibly closed by remote peer"),
	   "libmicrohttpd's own words for a reset: not logged");
	OK(http_log_is_client_gone("Connection was closed by remote side with incomplete request."),
	   "a request the client gave up on: not logged");
	OK(!http_log_is_client_gone("Closing connection (out of memory)."), "out of memory: logged");
	OK(!http_log_is_client_gone("Failed to send the response headers for the request for `/mcp'. Error: No buffer space available"),
	   "a send that failed for another reason: logged");
	OK(!http_log_is_client_gone("Too large value of 'Content-Length' header. Closing connection."), "a bad request: logged");
	DONE();
}
