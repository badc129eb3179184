// The admin API's interactive docs (/api/docs): Swagger UI served by the admin API itself
// (no CDN, no inline script: the page's Content-Security-Policy allows scripts from 'self'
// only). The token typed into "Authorize" lives in this page's memory: it is not persisted.
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    persistAuthorization: false,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
});
