package fleet

// ScaleProm is scaleProm for the external tests (the fleet dashboard's
// benchmark imports tui/fleetview, which imports this package).
var ScaleProm = scaleProm
