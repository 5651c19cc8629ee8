"""The judge providers' wire protocols, one step each, behind `tracejudge.llm.providers` (import from there).

`records` holds the provider-neutral request, the HTTP and normalized replies,
the rate-limit state and the error; `payload` builds a request's URL, headers
and JSON body per protocol; `transport` sends it over one shared aiohttp
session; `rate_headers` reads the providers' rate-limit headers; `read` turns
an HTTP reply into a `Reply` or a `ProviderError`.
"""
